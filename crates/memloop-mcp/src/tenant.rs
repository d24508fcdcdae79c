//! Which tenant a tool call acts in. Over stdio there is one user of the
//! process, so the tenant is fixed. Over HTTP the server authenticates the
//! request and says whose it is: the resolver reads that from the request.

use std::fmt;
use std::sync::Arc;

use http::request::Parts;
use memloop::Scope;

/// The tenant an authentication layer decided a request belongs to. A
/// middleware in front of the MCP route inserts it into the request's
/// extensions (`request.extensions_mut().insert(McpTenant("acme".into()))`);
/// [`TenantResolver::from_extension`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpTenant(pub String);

type ResolveFn = dyn Fn(&Parts) -> Result<String, String> + Send + Sync;

/// Decides the tenant of each tool call.
#[derive(Clone)]
pub struct TenantResolver(Resolver);

#[derive(Clone)]
enum Resolver {
    Fixed(String),
    FromRequest(Arc<ResolveFn>),
}

impl TenantResolver {
    /// Every call acts in `tenant` (stdio; a single-tenant HTTP server).
    pub fn fixed(tenant: impl Into<String>) -> TenantResolver {
        TenantResolver(Resolver::Fixed(tenant.into()))
    }

    /// The tenant is whatever `resolve` makes of the HTTP request's head
    /// (headers, extensions). An `Err` message is returned to the caller as a
    /// tool error and nothing is read or written.
    pub fn new(
        resolve: impl Fn(&Parts) -> Result<String, String> + Send + Sync + 'static,
    ) -> TenantResolver {
        TenantResolver(Resolver::FromRequest(Arc::new(resolve)))
    }

    /// The tenant is the [`McpTenant`] extension an authentication middleware
    /// put on the request. A request without one is refused: a missing auth
    /// layer fails closed instead of landing in the default tenant.
    pub fn from_extension() -> TenantResolver {
        TenantResolver::new(|parts| {
            parts
                .extensions
                .get::<McpTenant>()
                .map(|t| t.0.clone())
                .ok_or_else(|| {
                    "this request carries no tenant: the server must authenticate it (an API key) before the MCP endpoint".to_string()
                })
        })
    }

    /// The tenant for one call; `parts` is the HTTP request's head, absent
    /// over stdio.
    pub(crate) fn resolve(&self, parts: Option<&Parts>) -> Result<String, String> {
        match (&self.0, parts) {
            (Resolver::Fixed(t), _) => Ok(t.clone()),
            (Resolver::FromRequest(f), Some(parts)) => f(parts),
            (Resolver::FromRequest(_), None) => Err(
                "this server takes the tenant from the HTTP request, and the call came without one"
                    .to_string(),
            ),
        }
    }
}

impl Default for TenantResolver {
    /// The default tenant, as the CLI uses.
    fn default() -> Self {
        TenantResolver::fixed(Scope::DEFAULT_TENANT)
    }
}

impl fmt::Debug for TenantResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Resolver::Fixed(t) => f.debug_tuple("TenantResolver::Fixed").field(t).finish(),
            Resolver::FromRequest(_) => f.write_str("TenantResolver::FromRequest(..)"),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parts(tenant: Option<&str>) -> Parts {
        let mut req = http::Request::builder().uri("/mcp").body(()).unwrap();
        if let Some(t) = tenant {
            req.extensions_mut().insert(McpTenant(t.into()));
        }
        req.into_parts().0
    }

    #[test]
    fn extension_resolver_fails_closed() {
        let r = TenantResolver::from_extension();
        assert_eq!(r.resolve(Some(&parts(Some("acme")))).unwrap(), "acme");
        assert!(r.resolve(Some(&parts(None))).is_err());
        assert!(r.resolve(None).is_err());
    }

    #[test]
    fn fixed_ignores_the_request() {
        let r = TenantResolver::fixed("t1");
        assert_eq!(r.resolve(None).unwrap(), "t1");
        assert_eq!(r.resolve(Some(&parts(Some("other")))).unwrap(), "t1");
        assert_eq!(TenantResolver::default().resolve(None).unwrap(), "default");
    }
}
