//! One conformance suite for every long-term store: the same tests, run
//! against the embedded SQLite store and the PostgreSQL store, check the
//! promises of `memloop_longterm` (CRUD, filters, history, supersession,
//! forget and purge, tenants, idempotent inserts, TTL and what an expired memory reads as, changes to ended memories, concurrent writers,
//! as_of, the outbox, the entity graph). The PostgreSQL half needs the test server
//! (scripts/pg.sh start; scripts/test.sh starts it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod backend;
mod cases;
mod changes;
mod expiry;
mod graph;

/// Runs each case once per backend: `sqlite::case` and `postgres::case`.
macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $case() {
                    crate::cases::$case(&crate::backend::Sqlite::new());
                }
            )*
        }
        mod postgres {
            $(
                #[test]
                fn $case() {
                    crate::cases::$case(&crate::backend::Pg::new());
                }
            )*
        }
    };
}

conformance!(
    crud_and_history,
    list_filters_kinds_and_narrowing,
    search_ranks_keyword_and_vector_matches,
    keyword_scores_are_bm25_of_the_counted_terms,
    a_long_context_weighs_at_most_its_bound,
    search_filters_and_narrowing,
    supersession_is_single_and_marks_evidence,
    concurrent_supersessions_leave_one_current,
    delete_forget_and_purge,
    tenants_are_walls,
    idempotent_inserts,
    concurrent_identical_inserts_store_one,
    ttl_expired_is_gone,
    expired_reads_as_deleted_and_counts_leave_it_out,
    concurrent_writers_lose_nothing,
    as_of_reads_the_past,
    another_handle_sees_writes_at_once,
    retrievals_are_batched_and_seen_at_once,
    outbox_round_trip,
    stats_and_entities,
    sessions_on_a_time_axis,
    time_window_filters_and_boosts,
    pieces_answer_for_their_memory,
    changes_to_ended_memories_are_refused_alike,
    a_deleted_evidence_episode_reads_as_deleted,
    graph_links_current_memories_within_walls,
    single_valued_relations_end_and_as_of_reads_the_past,
    a_dump_carries_the_graph,
);
