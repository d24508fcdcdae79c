//! The native half of the `memloop` Python package: the engine embedded in
//! the interpreter's process. One class, `Engine`, with one entry point,
//! `call(op, args)`: an operation's name and its arguments as JSON in, its
//! answer as JSON out. The Python half (`python/memloop/`) gives that
//! Mem0's `Memory` interface and memloop's own loop, with types and
//! docstrings; keeping the native surface this small keeps every
//! conversion in one place (`ops.rs`) and the binding's overhead one JSON
//! round trip. The interpreter's lock is released for the whole call, so
//! threads search and write at once.

mod ops;

use std::sync::Arc;

use memloop::{Config, MemoryLoop};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    _native,
    NativeError,
    PyException,
    "An engine error: args are (code, message); memloop.errors maps the code to its class."
);

fn to_py(e: memloop::Error) -> PyErr {
    NativeError::new_err((e.code(), e.to_string()))
}

/// A memory store and the loop over it, opened on a data directory, acting
/// in one tenant. Share it between threads freely.
#[pyclass(frozen, module = "memloop._native")]
struct Engine {
    lp: Arc<MemoryLoop>,
    tenant: String,
}

#[pymethods]
impl Engine {
    /// Opens the engine: `config` is a JSON object with the configuration
    /// file's sections (none: the file `MEMLOOP_CONFIG` names, or the
    /// defaults, with the environment's overrides); `data_dir` overrides
    /// the configured data directory.
    #[new]
    #[pyo3(signature = (data_dir=None, config=None, tenant=None))]
    fn new(
        py: Python<'_>,
        data_dir: Option<String>,
        config: Option<String>,
        tenant: Option<String>,
    ) -> PyResult<Engine> {
        let tenant = tenant.unwrap_or_else(|| memloop::Scope::default().tenant);
        check_tenant(&tenant).map_err(to_py)?;
        let lp = py
            .detach(|| -> memloop::Result<MemoryLoop> {
                let mut cfg = load_config(config.as_deref())?;
                if let Some(dir) = data_dir {
                    cfg.data_dir = dir.into();
                }
                MemoryLoop::open(&cfg)
            })
            .map_err(to_py)?;
        Ok(Engine {
            lp: Arc::new(lp),
            tenant,
        })
    }

    /// Runs operation `op` with `args` (a JSON object); returns its answer
    /// as JSON. Raises `NativeError(code, message)`.
    fn call(&self, py: Python<'_>, op: &str, args: &str) -> PyResult<String> {
        py.detach(|| ops::call(&self.lp, &self.tenant, op, args))
            .map_err(to_py)
    }

    /// `call`, with the seconds spent inside the engine (arguments read,
    /// the library's work, the answer written): what the benchmark sets
    /// against the whole Python call to find the binding's own cost.
    fn timed_call(&self, py: Python<'_>, op: &str, args: &str) -> PyResult<(String, f64)> {
        py.detach(|| {
            let start = std::time::Instant::now();
            let answer = ops::call(&self.lp, &self.tenant, op, args)?;
            Ok((answer, start.elapsed().as_secs_f64()))
        })
        .map_err(to_py)
    }

    /// The same store acting in another tenant: its memories are walled off
    /// from this one's.
    fn with_tenant(&self, tenant: String) -> PyResult<Engine> {
        check_tenant(&tenant).map_err(to_py)?;
        Ok(Engine {
            lp: self.lp.clone(),
            tenant,
        })
    }

    /// A loop over the same store with its own settings: `config` holds the
    /// configuration file's `loop`, `llm` and `short_term` sections.
    fn with_loop(&self, py: Python<'_>, config: &str) -> PyResult<Engine> {
        let lp = py
            .detach(|| -> memloop::Result<MemoryLoop> {
                let cfg = load_config(Some(config))?;
                let mut lp = MemoryLoop::new(
                    self.lp.shared_memory(),
                    cfg.short_term.open()?,
                    cfg.turn.clone(),
                )?;
                if let Some(llm) = &cfg.llm {
                    lp = lp.with_llm(Arc::from(llm.build()?));
                }
                Ok(lp)
            })
            .map_err(to_py)?;
        Ok(Engine {
            lp: Arc::new(lp),
            tenant: self.tenant.clone(),
        })
    }

    /// The tenant this engine acts in.
    #[getter]
    fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Whether an LLM is configured (`turn` needs one for its reply).
    #[getter]
    fn has_llm(&self) -> bool {
        self.lp.has_llm()
    }

    /// The data directory's path, or the PostgreSQL store's redacted URL.
    #[getter]
    fn location(&self) -> String {
        self.lp.memory().store().location()
    }
}

/// A config from JSON, or as the CLI loads one without `--config`.
fn load_config(json: Option<&str>) -> memloop::Result<Config> {
    match json {
        Some(text) => {
            let value: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| memloop::Error::invalid(format!("config is not valid JSON: {e}")))?;
            Config::from_json(&value, "config")
        }
        None => {
            let file = std::env::var_os("MEMLOOP_CONFIG").map(std::path::PathBuf::from);
            Config::load(file.as_deref())
        }
    }
}

fn check_tenant(tenant: &str) -> memloop::Result<()> {
    memloop::Scope {
        tenant: tenant.to_string(),
        user_id: Some("u".into()),
        ..Default::default()
    }
    .validate()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    Ok(())
}
