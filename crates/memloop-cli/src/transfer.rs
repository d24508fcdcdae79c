//! `memloop export` / `memloop import`: a store as JSONL (docs/export.md),
//! to back it up or move it between backends.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use memloop::dump::{
    DumpHeader, DumpLine, DumpedHistory, DumpedLinks, RestoreBatch, RestoreReport, RestoredMemory,
    FORMAT, VERSION,
};
use memloop::{Config, Embedded, Error, Memory, MemoryRecord};

use crate::output::Output;

#[derive(Args)]
pub struct ExportArgs {
    /// Only this user's memories and history (in every tenant).
    #[arg(long)]
    pub user: Option<String>,
    /// Include each memory's vector: import then needs no embedding, but
    /// the file is about ten times larger.
    #[arg(long)]
    pub vectors: bool,
}

#[derive(Args)]
pub struct ImportArgs {
    /// A file written by `memloop export` (`-`: standard input).
    pub file: PathBuf,
}

/// Memories (or history groups) written per transaction.
const BATCH: usize = 256;

pub fn export(config: &Config, a: ExportArgs) -> anyhow::Result<()> {
    let memory = Memory::open_with(config)?;
    let store = memory.store();
    let mut w = BufWriter::new(std::io::stdout().lock());
    let mut line = |l: &DumpLine| -> memloop::Result<()> {
        serde_json::to_writer(&mut w, l).map_err(|e| Error::Internal(e.to_string()))?;
        w.write_all(b"\n")
            .map_err(|e| Error::Internal(format!("writing the export: {e}")))
    };
    line(&DumpLine::Header(DumpHeader {
        format: FORMAT.into(),
        version: VERSION,
        embedder: store.embedder().clone(),
        vectors: a.vectors,
        user: a.user.clone(),
    }))?;
    store.dump(a.user.as_deref(), a.vectors, &mut |l| line(&l))?;
    w.flush()
        .map_err(|e| Error::Internal(format!("writing the export: {e}")))?;
    Ok(())
}

/// Lines read so far and what they wait to become.
struct Pending<'m> {
    memory: &'m Memory,
    memories: Vec<(MemoryRecord, Option<Embedded>, DumpedLinks)>,
    history: Vec<Vec<DumpedHistory>>,
    /// The history group still being read (its memory's lines may go on).
    open: Vec<DumpedHistory>,
    report: RestoreReport,
}

impl Pending<'_> {
    /// Writes what is complete: memories (embedded here when the file has
    /// no vectors for them) and closed history groups.
    fn flush(&mut self) -> memloop::Result<()> {
        let texts: Vec<&str> = self
            .memories
            .iter()
            .filter(|(_, e, _)| e.is_none())
            .map(|(r, _, _)| r.text.as_str())
            .collect();
        let mut computed = if texts.is_empty() {
            Vec::new()
        } else {
            self.memory.embed_all(&texts)?
        }
        .into_iter();
        let mut batch = RestoreBatch::default();
        for (record, e, links) in self.memories.drain(..) {
            let embedded = match e {
                Some(e) => e,
                None => computed.next().ok_or_else(|| {
                    Error::Internal("the embedder returned too few vectors".into())
                })?,
            };
            batch.memories.push(RestoredMemory {
                record,
                embedded,
                links,
            });
        }
        batch.history = std::mem::take(&mut self.history);
        let done = self.memory.store().restore(&batch)?;
        self.report.add(done);
        Ok(())
    }

    fn full(&self) -> bool {
        self.memories.len() >= BATCH || self.history.len() >= BATCH
    }
}

pub fn import(config: &Config, out: &Output, a: ImportArgs) -> anyhow::Result<()> {
    let memory = Memory::open_with(config)?;
    let reader: Box<dyn BufRead> = if a.file.as_os_str() == "-" {
        Box::new(BufReader::new(std::io::stdin().lock()))
    } else {
        let f = std::fs::File::open(&a.file)
            .map_err(|e| Error::invalid(format!("cannot read {}: {e}", a.file.display())))?;
        Box::new(BufReader::new(f))
    };
    let mut pending = Pending {
        memory: &memory,
        memories: Vec::new(),
        history: Vec::new(),
        open: Vec::new(),
        report: RestoreReport::default(),
    };
    let mut keep_vectors = true;
    let mut header_seen = false;
    let mut lines = 0usize;
    for (i, text) in reader.lines().enumerate() {
        let n = i + 1;
        let outcome = text
            .map_err(|e| Error::invalid(format!("cannot read it ({e})")))
            .and_then(|text| {
                if text.trim().is_empty() {
                    return Ok(());
                }
                lines += 1;
                let line: DumpLine = serde_json::from_str(&text)
                    .map_err(|e| Error::invalid(format!("not a line of a memloop export ({e})")))?;
                take(&mut pending, line, &mut header_seen, &mut keep_vectors)
            });
        if let Err(e) = outcome {
            // What came before the bad line is stored; the group it may
            // belong to is not, so importing the fixed file completes it.
            let kept = pending.flush();
            let report = pending.report;
            kept?;
            return Err(Error::invalid(format!(
                "{} line {n}: {e}; the lines before it are stored ({} memories, {} history entries): \
                 fix the line and import the file again (what is stored is skipped)",
                a.file.display(),
                report.memories,
                report.history
            ))
            .into());
        }
        if pending.full() {
            pending.flush()?;
        }
    }
    if !header_seen {
        return Err(Error::invalid(format!(
            "{} is empty: an export starts with a header line",
            a.file.display()
        ))
        .into());
    }
    let open = std::mem::take(&mut pending.open);
    if !open.is_empty() {
        pending.history.push(open);
    }
    pending.flush()?;
    let r = pending.report;
    if out.json {
        return out.json_value(&r);
    }
    println!(
        "imported {} memories ({} already stored) and {} history entries ({} memories' history already stored) from {lines} lines",
        r.memories, r.memories_present, r.history, r.history_present
    );
    Ok(())
}

/// Checks one parsed line and queues it.
fn take(
    p: &mut Pending<'_>,
    line: DumpLine,
    header_seen: &mut bool,
    keep_vectors: &mut bool,
) -> memloop::Result<()> {
    let line = match (line, *header_seen) {
        (DumpLine::Header(h), false) => {
            *header_seen = true;
            if h.format != FORMAT || h.version != VERSION {
                return Err(Error::invalid(format!(
                    "format {} version {} is not one this memloop reads ({FORMAT} version {VERSION})",
                    h.format, h.version
                )));
            }
            let ours = p.memory.store().embedder();
            if h.vectors && h.embedder != *ours {
                *keep_vectors = false;
                eprintln!(
                    "note: the file's vectors are of {}, this store embeds with {}: every memory is embedded again",
                    h.embedder, ours
                );
            }
            return Ok(());
        }
        (_, false) => return Err(Error::invalid("the first line must be the export's header")),
        (DumpLine::Header(_), true) => return Err(Error::invalid("a second header line")),
        (line, true) => line,
    };
    match line {
        DumpLine::Memory(m) => {
            let (record, vector, links) = m.into_parts();
            memloop::validate_memory_id(&record.id)?;
            record.scope.validate()?;
            memloop::text::validate_text(&record.text)?;
            links.check()?;
            let vectors = vector.filter(|_| *keep_vectors);
            if let Some(e) = &vectors {
                std::iter::once(&e.vector)
                    .chain(&e.pieces)
                    .try_for_each(|v| check_vector(p, v))?;
                // The piece count, as the store checks it, before the batch.
                e.check(p.memory.store().embedder())?;
            }
            p.memories.push((record, vectors, links));
        }
        DumpLine::History(h) => {
            memloop::validate_memory_id(&h.memory_id)?;
            if !h.partition.starts_with(&format!("{}\u{1f}", h.tenant)) {
                return Err(Error::invalid(format!(
                    "history of {}: partition {:?} is not of tenant {:?}",
                    h.memory_id, h.partition, h.tenant
                )));
            }
            if p.open.first().is_some_and(|o| o.memory_id != h.memory_id) {
                let group = std::mem::take(&mut p.open);
                p.history.push(group);
            }
            p.open.push(h);
        }
        DumpLine::Header(_) => {}
    }
    Ok(())
}

fn check_vector(p: &Pending<'_>, v: &[f32]) -> memloop::Result<()> {
    let info = p.memory.store().embedder();
    if v.len() != info.dimensions || v.iter().any(|x| !x.is_finite()) {
        return Err(Error::invalid(format!(
            "a vector of {} numbers where {} embeds {} finite ones",
            v.len(),
            info,
            info.dimensions
        )));
    }
    Ok(())
}
