//! Learning from repetition: a new run of a task merged into the stored
//! procedure. Pure: the facade finds the stored procedure and applies the
//! answer (ADD for the first run, UPDATE by supersession, NOOP for a run
//! already counted).

use super::model::{Outcome, Pitfall, Procedure, ProcedureRun, Step, MAX_PITFALLS, MAX_RUN_IDS};

/// The identity of a run for idempotency: the caller's `execution_id`, else,
/// when the caller said when it ran, the run itself (the same report of
/// the same run at the same time is one run). A run without either is
/// counted every time it is recorded: two identical runs are two runs.
pub fn run_key(run: &ProcedureRun) -> Option<String> {
    if let Some(id) = &run.execution_id {
        return Some(format!("id:{id}"));
    }
    run.at?;
    let canonical = serde_json::to_string(run).ok()?;
    Some(format!(
        "sha:{}",
        &memloop_core::text::content_hash(&canonical)[..16]
    ))
}

/// A procedure that has seen no run yet, for `task`.
fn empty(task: &str, at: i64) -> Procedure {
    Procedure {
        task: task.trim().to_string(),
        steps: Vec::new(),
        successes: 0,
        failures: 0,
        partials: 0,
        last_outcome: Outcome::Success,
        last_error: None,
        last_run: at,
        pitfalls: Vec::new(),
        execution_ids: Vec::new(),
    }
}

/// The procedure a task's first run makes.
pub fn first(run: &ProcedureRun, now: i64) -> Procedure {
    let at = run.at.unwrap_or(now);
    merge(&empty(&run.task, at), run, now).unwrap_or_else(|| empty(&run.task, at))
}

/// `stored` with `run` counted, or None when the run was counted already.
pub fn merge(stored: &Procedure, run: &ProcedureRun, now: i64) -> Option<Procedure> {
    let key = run_key(run);
    if key
        .as_ref()
        .is_some_and(|k| stored.execution_ids.contains(k))
    {
        return None;
    }
    let mut p = stored.clone();
    let at = run.at.unwrap_or(now);
    match run.outcome {
        Outcome::Success => p.successes += 1,
        Outcome::Failure => p.failures += 1,
        Outcome::Partial => p.partials += 1,
    }
    let newest = p.runs() == 1 || at >= stored.last_run;
    if newest {
        p.last_run = at;
        p.last_outcome = run.outcome;
        p.last_error = run.error.clone().or_else(|| failed_error(run));
    }
    for pitfall in pitfalls_of(run) {
        add_pitfall(&mut p.pitfalls, pitfall);
    }
    let proven = stored.successes > 0;
    match run.outcome {
        Outcome::Success if newest || !proven => {
            replace_open_pitfalls(&mut p.pitfalls, &run.steps);
            p.steps = run.steps.iter().filter(|s| s.ok).cloned().collect();
        }
        Outcome::Success => replace_open_pitfalls(&mut p.pitfalls, &run.steps),
        // Until something worked, the steps are the latest attempt's.
        Outcome::Failure | Outcome::Partial if !proven && newest => p.steps = run.steps.clone(),
        Outcome::Failure | Outcome::Partial => {}
    }
    if p.steps.is_empty() {
        p.steps = run.steps.clone();
    }
    if let Some(k) = key {
        p.execution_ids.push(k);
        let extra = p.execution_ids.len().saturating_sub(MAX_RUN_IDS);
        p.execution_ids.drain(..extra);
    }
    Some(p)
}

/// The error a failed run's failing step reported.
fn failed_error(run: &ProcedureRun) -> Option<String> {
    run.steps.iter().rev().find(|s| !s.ok)?.error.clone()
}

/// The run's failed steps as pitfalls, each with its position and, when a
/// later step of the run took its place, that step. A failed run that
/// marks no step failed failed at its last step.
fn pitfalls_of(run: &ProcedureRun) -> Vec<Pitfall> {
    let failed: Vec<usize> = match run.steps.iter().any(|s| !s.ok) {
        true => (0..run.steps.len()).filter(|&i| !run.steps[i].ok).collect(),
        false if run.outcome == Outcome::Failure => vec![run.steps.len().saturating_sub(1)],
        false => Vec::new(),
    };
    failed
        .into_iter()
        .filter_map(|i| {
            let step = run.steps.get(i)?;
            let replaced_by = run.steps[i + 1..]
                .iter()
                .find(|s| s.ok && !s.same_action(step))
                .filter(|_| run.outcome != Outcome::Failure || i + 1 < run.steps.len())
                .map(Step::command);
            let error = step.error.clone().or_else(|| {
                (run.outcome == Outcome::Failure)
                    .then(|| run.error.clone())
                    .flatten()
            });
            Some(Pitfall {
                step: step.command(),
                error,
                replaced_by,
                seen: 1,
                position: i,
            })
        })
        .collect()
}

/// Counts a pitfall seen again, or keeps a new one (the oldest dropped past
/// [`MAX_PITFALLS`]).
fn add_pitfall(pitfalls: &mut Vec<Pitfall>, new: Pitfall) {
    if let Some(p) = pitfalls.iter_mut().find(|p| p.step == new.step) {
        p.seen += 1;
        p.position = new.position;
        if new.error.is_some() {
            p.error = new.error;
        }
        if new.replaced_by.is_some() {
            p.replaced_by = new.replaced_by;
        }
        return;
    }
    pitfalls.push(new);
    let extra = pitfalls.len().saturating_sub(MAX_PITFALLS);
    pitfalls.drain(..extra);
}

/// A successful run names what works instead of an earlier run's failed
/// step: its own step at the same position, when that is another action.
fn replace_open_pitfalls(pitfalls: &mut [Pitfall], steps: &[Step]) {
    let worked: Vec<&Step> = steps.iter().filter(|s| s.ok).collect();
    for p in pitfalls.iter_mut().filter(|p| p.replaced_by.is_none()) {
        if let Some(s) = worked.get(p.position).filter(|s| s.command() != p.step) {
            p.replaced_by = Some(s.command());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(tool: &str, args: &str) -> Step {
        Step {
            tool: tool.into(),
            args: args.into(),
            result: "ok".into(),
            ok: true,
            error: None,
        }
    }

    fn failed(tool: &str, args: &str, error: &str) -> Step {
        Step {
            ok: false,
            error: Some(error.into()),
            result: String::new(),
            ..step(tool, args)
        }
    }

    fn run(steps: Vec<Step>, outcome: Outcome, at: i64) -> ProcedureRun {
        ProcedureRun {
            task: "deploy the web app".into(),
            steps,
            outcome,
            error: None,
            at: Some(at),
            execution_id: None,
        }
    }

    #[test]
    fn success_then_failure_then_success_counts_and_keeps_the_pitfall() {
        let good = vec![
            step("git", "pull"),
            step("sudo", "-u deploy npm run deploy"),
        ];
        let p = first(&run(good.clone(), Outcome::Success, 1_000), 0);
        assert_eq!((p.successes, p.failures), (1, 0));
        assert_eq!(p.steps, good);
        assert!(p.pitfalls.is_empty());

        let bad = vec![step("git", "pull"), failed("npm", "run deploy", "EACCES")];
        let p = merge(&p, &run(bad, Outcome::Failure, 2_000), 0).unwrap();
        assert_eq!((p.successes, p.failures), (1, 1));
        assert_eq!(p.last_outcome, Outcome::Failure);
        assert_eq!(p.last_error.as_deref(), Some("EACCES"));
        // A failure does not replace steps that worked.
        assert_eq!(p.steps, good);
        assert_eq!(p.pitfalls.len(), 1);
        assert_eq!(p.pitfalls[0].step, "npm run deploy");
        assert_eq!(p.pitfalls[0].replaced_by, None);

        let p = merge(&p, &run(good.clone(), Outcome::Success, 3_000), 0).unwrap();
        assert_eq!((p.successes, p.failures), (2, 1));
        assert_eq!(p.last_outcome, Outcome::Success);
        assert_eq!(p.last_run, 3_000);
        assert_eq!(
            p.pitfalls[0].sentence(),
            "`npm run deploy` failed with EACCES; `sudo -u deploy npm run deploy` worked"
        );
        assert!((p.success_rate() - 3.0 / 5.0).abs() < 1e-6);
    }

    #[test]
    fn a_failed_step_replaced_within_a_run_is_a_pitfall_and_not_a_step() {
        let steps = vec![
            failed("npm", "run deploy", "EACCES: permission denied"),
            step("sudo", "-u deploy npm run deploy"),
        ];
        let p = first(&run(steps, Outcome::Success, 5), 0);
        assert_eq!(p.steps_line(), "sudo -u deploy npm run deploy");
        assert_eq!(
            p.pitfalls[0].replaced_by.as_deref(),
            Some("sudo -u deploy npm run deploy")
        );
        assert!(p
            .text()
            .contains("Pitfall: `npm run deploy` failed with EACCES"));
    }

    #[test]
    fn the_same_run_twice_is_counted_once() {
        let r = run(vec![step("make", "deploy")], Outcome::Success, 7);
        let p = first(&r, 0);
        assert_eq!(merge(&p, &r, 0), None);
        let mut with_id = r.clone();
        with_id.at = None;
        with_id.execution_id = Some("ci-41".into());
        let p = merge(&p, &with_id, 9).unwrap();
        assert_eq!(p.successes, 2);
        assert_eq!(merge(&p, &with_id, 10), None);
        // Without a run id or a time, every report is a run of its own.
        let mut anon = with_id.clone();
        anon.execution_id = None;
        let p2 = merge(&p, &anon, 11).unwrap();
        assert_eq!(merge(&p2, &anon, 12).map(|p| p.successes), Some(4));
    }

    #[test]
    fn a_failed_run_without_marked_steps_failed_at_its_last_step() {
        let mut r = run(
            vec![step("git", "pull"), step("npm", "run deploy")],
            Outcome::Failure,
            1,
        );
        r.error = Some("EACCES".into());
        let p = first(&r, 0);
        assert_eq!(p.pitfalls[0].step, "npm run deploy");
        assert_eq!(p.pitfalls[0].error.as_deref(), Some("EACCES"));
        // Until something worked, the steps are the latest attempt's.
        assert_eq!(p.steps.len(), 2);
        assert!((p.success_rate() - 1.0 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn an_older_run_reported_late_does_not_move_the_last_outcome() {
        let p = first(&run(vec![step("a", "")], Outcome::Success, 100), 0);
        let p = merge(
            &p,
            &run(vec![failed("b", "", "boom")], Outcome::Failure, 50),
            0,
        )
        .unwrap();
        assert_eq!(p.last_outcome, Outcome::Success);
        assert_eq!(p.last_run, 100);
        assert_eq!(p.failures, 1);
    }
}
