//! Retrieval counts in batches (`memloop_longterm::access`): a search
//! used to write its hits' counts in a transaction of its own, an UPDATE
//! of each row (a new row version, and its index entries when the page had
//! no room) and a commit's WAL sync, which was about half of a search at
//! 100,000 memories. Now the batch's thread writes them every few seconds,
//! all tenants in one transaction, each tenant's rows under its own
//! row-level security setting; on a connection of the pool.

use std::collections::HashMap;
use std::sync::Arc;

use memloop_longterm::access::{AccessBatch, PendingAccess};

use crate::pool::{Pool, TxMode};
use crate::{set_tenancy, Tenancy};

/// Starts the batch writing through `pool`.
pub(crate) fn start(pool: Arc<Pool>) -> AccessBatch {
    AccessBatch::start(move |pending| write(&pool, pending))
}

fn write(pool: &Pool, pending: &PendingAccess) -> memloop_core::Result<()> {
    // Per tenant: ids, counts, latest times.
    type Columns<'a> = (Vec<&'a str>, Vec<i64>, Vec<i64>);
    let mut by_tenant: HashMap<&str, Columns<'_>> = HashMap::new();
    for ((tenant, id), (count, at)) in pending {
        let c = by_tenant.entry(tenant.as_str()).or_default();
        c.0.push(id.as_str());
        c.1.push(i64::try_from(*count).unwrap_or(i64::MAX));
        c.2.push(*at);
    }
    let mut conn = pool.get()?;
    let mut tx = conn.begin(TxMode::Write)?;
    for (tenant, (ids, counts, ats)) in &by_tenant {
        set_tenancy(&mut tx, Tenancy::One(tenant))?;
        tx.execute(
            "UPDATE memories m SET access_count = m.access_count + a.n, \
             last_accessed_at = GREATEST(COALESCE(m.last_accessed_at, a.at), a.at) \
             FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS a(id, n, at) \
             WHERE m.id = a.id AND m.tenant = $4",
            &[ids, counts, ats, tenant],
        )?;
    }
    tx.commit()
}
