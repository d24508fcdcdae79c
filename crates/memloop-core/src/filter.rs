//! Metadata filters: one expression tree, written either as text
//! (`category = "food" AND (rating >= 4 OR tag IN ["a", "b"])`, the CLI form)
//! or as Mem0-style JSON (`{"AND": [{"category": "food"}, {"rating": {"gte": 4}}]}`).
//!
//! A field is a built-in one (`kind`, `user_id`, `agent_id`, `session_id`,
//! `created_at`, `updated_at`, `valid_from`, `importance`, `source`) or a path into
//! the metadata (`metadata.a.b`, or just `a.b`). Order comparisons work on
//! numbers and on dates (RFC 3339 or `YYYY-MM-DD`); a value of another type never matches them.

use std::cmp::Ordering;

use serde_json::Value;

pub use crate::time::parse_date;
use crate::{Error, MemoryRecord, Result};

/// The longest text filter accepted, in bytes. A filter is a handful of
/// conditions; anything longer is a mistake or an attack, and refusing it
/// early keeps the lexer's work bounded.
pub const MAX_FILTER_BYTES: usize = 16 * 1024;

/// How deep parentheses, `NOT`s and nested JSON `AND`/`OR`/`NOT` may go.
/// Parsing and matching recurse once a level, so without this bound a few
/// kilobytes of `((((…` overflow the stack and abort the whole process.
pub const MAX_FILTER_DEPTH: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    In,
    NotIn,
    /// Mem0's `contains`: a text holding the value, or a list holding it.
    Contains,
    /// Mem0's `icontains`: the same, ignoring case.
    IContains,
    /// Mem0's wildcard (`{"field": "*"}`): the field has a value.
    Exists,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    And(Vec<Filter>),
    Or(Vec<Filter>),
    Not(Box<Filter>),
    Cond { field: String, op: Op, value: Value },
}

impl Filter {
    /// Parses the text form.
    pub fn parse(text: &str) -> Result<Filter> {
        if text.len() > MAX_FILTER_BYTES {
            return Err(bad(format!(
                "it is {} bytes long, more than the {MAX_FILTER_BYTES} accepted; \
                 split it or use fewer conditions",
                text.len()
            )));
        }
        let tokens = lex(text)?;
        let mut p = Parser {
            tokens,
            pos: 0,
            depth: 0,
        };
        let f = p.or()?;
        if p.pos != p.tokens.len() {
            return Err(bad(format!(
                "unexpected {} after a complete expression",
                p.tokens[p.pos].describe()
            )));
        }
        Ok(f)
    }

    /// Parses the JSON form.
    pub fn from_json(value: &Value) -> Result<Filter> {
        Self::from_json_at(value, 0)
    }

    fn from_json_at(value: &Value, depth: usize) -> Result<Filter> {
        if depth >= MAX_FILTER_DEPTH {
            return Err(too_deep());
        }
        let obj = value
            .as_object()
            .ok_or_else(|| bad("a filter must be a JSON object".into()))?;
        let mut parts = Vec::new();
        for (key, v) in obj {
            match key.as_str() {
                "AND" | "and" | "OR" | "or" => {
                    let list = v
                        .as_array()
                        .ok_or_else(|| bad(format!("{key} takes a list of filters")))?;
                    let subs = list
                        .iter()
                        .map(|f| Filter::from_json_at(f, depth + 1))
                        .collect::<Result<_>>()?;
                    parts.push(if key.eq_ignore_ascii_case("and") {
                        Filter::And(subs)
                    } else {
                        Filter::Or(subs)
                    });
                }
                // Mem0 gives NOT a list: none of its filters holds.
                "NOT" | "not" => {
                    let inner = match v.as_array() {
                        Some(list) => {
                            let mut subs = list
                                .iter()
                                .map(|f| Filter::from_json_at(f, depth + 1))
                                .collect::<Result<Vec<_>>>()?;
                            if subs.len() == 1 {
                                subs.remove(0)
                            } else {
                                Filter::Or(subs)
                            }
                        }
                        None => Filter::from_json_at(v, depth + 1)?,
                    };
                    parts.push(Filter::Not(Box::new(inner)))
                }
                field => parts.push(json_condition(field, v)?),
            }
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Filter::And(parts)
        })
    }

    pub fn matches(&self, record: &MemoryRecord) -> bool {
        match self {
            Filter::And(fs) => fs.iter().all(|f| f.matches(record)),
            Filter::Or(fs) => fs.iter().any(|f| f.matches(record)),
            Filter::Not(f) => !f.matches(record),
            Filter::Cond { field, op, value } => {
                let actual = field_value(record, field);
                condition_holds(actual.as_ref(), *op, value)
            }
        }
    }
}

fn bad(msg: String) -> Error {
    Error::InvalidInput(format!(
        "bad filter: {msg} (example: category = \"food\" AND rating >= 4)"
    ))
}

fn too_deep() -> Error {
    bad(format!(
        "it nests more than {MAX_FILTER_DEPTH} levels of parentheses, NOT, AND or OR; \
         flatten it (a AND b AND c needs no parentheses)"
    ))
}

fn json_condition(field: &str, v: &Value) -> Result<Filter> {
    if v.as_str() == Some("*") {
        return Ok(Filter::Cond {
            field: field.to_string(),
            op: Op::Exists,
            value: Value::Null,
        });
    }
    let Some(ops) = v.as_object() else {
        return Ok(Filter::Cond {
            field: field.to_string(),
            op: Op::Eq,
            value: v.clone(),
        });
    };
    let mut conds = Vec::new();
    for (name, value) in ops {
        let op = match name.as_str() {
            "eq" => Op::Eq,
            "ne" => Op::Ne,
            "gt" => Op::Gt,
            "gte" => Op::Gte,
            "lt" => Op::Lt,
            "lte" => Op::Lte,
            "in" => Op::In,
            "nin" => Op::NotIn,
            "contains" => Op::Contains,
            "icontains" => Op::IContains,
            other => {
                return Err(bad(format!(
                    "unknown operator {other:?} on {field:?}: use eq, ne, gt, gte, lt, lte, in, nin, contains, icontains"
                )))
            }
        };
        if matches!(op, Op::In | Op::NotIn) && !value.is_array() {
            return Err(bad(format!("{name} on {field:?} takes a list")));
        }
        if op == Op::IContains && !value.is_string() {
            return Err(bad(format!("icontains on {field:?} takes a text")));
        }
        conds.push(Filter::Cond {
            field: field.to_string(),
            op,
            value: value.clone(),
        });
    }
    Ok(if conds.len() == 1 {
        conds.remove(0)
    } else {
        Filter::And(conds)
    })
}

fn field_value(r: &MemoryRecord, field: &str) -> Option<Value> {
    let opt_str = |s: &Option<String>| s.as_ref().map(|v| Value::String(v.clone()));
    match field {
        "kind" => Some(Value::String(r.kind.as_str().into())),
        "user_id" => opt_str(&r.scope.user_id),
        "agent_id" => opt_str(&r.scope.agent_id),
        "session_id" | "run_id" => opt_str(&r.scope.session_id),
        "created_at" => Some(r.created_at.into()),
        "updated_at" => Some(r.updated_at.into()),
        "valid_from" => Some(r.valid_from.into()),
        "importance" => serde_json::Number::from_f64(f64::from(r.importance)).map(Value::Number),
        "source" => Some(Value::String(r.provenance.source.clone())),
        _ => {
            let path = field.strip_prefix("metadata.").unwrap_or(field);
            let mut cur = &r.metadata;
            for part in path.split('.') {
                cur = cur.get(part)?;
            }
            Some(cur.clone())
        }
    }
}

/// Milliseconds of a date value: a number is taken as milliseconds, a string must be a date.
fn as_millis(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => parse_date(s),
        _ => None,
    }
}

fn compare(actual: &Value, expected: &Value) -> Option<Ordering> {
    if let (Some(a), Some(b)) = (actual.as_f64(), expected.as_f64()) {
        return a.partial_cmp(&b);
    }
    // Dates: at least one side a date string, the other a date string or milliseconds.
    if actual.is_string() || expected.is_string() {
        if let (Some(a), Some(b)) = (as_millis(actual), as_millis(expected)) {
            return Some(a.cmp(&b));
        }
    }
    None
}

fn equal(actual: &Value, expected: &Value) -> bool {
    match (actual.as_f64(), expected.as_f64()) {
        (Some(a), Some(b)) => a == b,
        _ => actual == expected,
    }
}

fn condition_holds(actual: Option<&Value>, op: Op, expected: &Value) -> bool {
    let Some(actual) = actual.filter(|v| !v.is_null() || op != Op::Exists) else {
        // A missing field is "not equal" to anything and in no list.
        return matches!(op, Op::Ne | Op::NotIn);
    };
    let list_has = |list: &Value| {
        list.as_array()
            .is_some_and(|l| l.iter().any(|v| equal(actual, v)))
    };
    match op {
        Op::Eq => equal(actual, expected),
        Op::Ne => !equal(actual, expected),
        Op::In => list_has(expected),
        Op::NotIn => !list_has(expected),
        Op::Gt => compare(actual, expected) == Some(Ordering::Greater),
        Op::Gte => matches!(
            compare(actual, expected),
            Some(Ordering::Greater | Ordering::Equal)
        ),
        Op::Lt => compare(actual, expected) == Some(Ordering::Less),
        Op::Lte => matches!(
            compare(actual, expected),
            Some(Ordering::Less | Ordering::Equal)
        ),
        Op::Exists => true,
        Op::Contains => match (actual, expected) {
            (Value::String(text), Value::String(part)) => text.contains(part.as_str()),
            (Value::Array(items), _) => items.iter().any(|v| equal(v, expected)),
            _ => false,
        },
        Op::IContains => {
            let Some(part) = expected.as_str().map(str::to_lowercase) else {
                return false;
            };
            match actual {
                Value::String(text) => text.to_lowercase().contains(&part),
                Value::Array(items) => items
                    .iter()
                    .any(|v| v.as_str().is_some_and(|t| t.to_lowercase() == part)),
                _ => false,
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Str(String),
    Num(f64),
    Op(Op),
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    And,
    Or,
    Not,
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Ident(s) => format!("word {s:?}"),
            Token::Str(s) => format!("string {s:?}"),
            Token::Num(n) => format!("number {n}"),
            Token::Op(op) => format!(
                "operator {}",
                match op {
                    Op::Eq => "=",
                    Op::Ne => "!=",
                    Op::Gt => ">",
                    Op::Gte => ">=",
                    Op::Lt => "<",
                    Op::Lte => "<=",
                    Op::In => "IN",
                    Op::NotIn => "NOT IN",
                    Op::Contains => "contains",
                    Op::IContains => "icontains",
                    Op::Exists => "*",
                }
            ),
            Token::LParen => "'('".into(),
            Token::RParen => "')'".into(),
            Token::LBracket => "'['".into(),
            Token::RBracket => "']'".into(),
            Token::Comma => "','".into(),
            Token::And => "AND".into(),
            Token::Or => "OR".into(),
            Token::Not => "NOT".into(),
        }
    }
}

fn lex(text: &str) -> Result<Vec<Token>> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '(' => push(&mut out, &mut i, Token::LParen),
            ')' => push(&mut out, &mut i, Token::RParen),
            '[' => push(&mut out, &mut i, Token::LBracket),
            ']' => push(&mut out, &mut i, Token::RBracket),
            ',' => push(&mut out, &mut i, Token::Comma),
            '=' | '!' | '<' | '>' => {
                let next = chars.get(i + 1).copied();
                let (op, len) = match (c, next) {
                    ('=', Some('=')) => (Op::Eq, 2),
                    ('=', _) => (Op::Eq, 1),
                    ('!', Some('=')) => (Op::Ne, 2),
                    ('<', Some('=')) => (Op::Lte, 2),
                    ('<', _) => (Op::Lt, 1),
                    ('>', Some('=')) => (Op::Gte, 2),
                    ('>', _) => (Op::Gt, 1),
                    _ => return Err(bad("'!' must be followed by '='".into())),
                };
                out.push(Token::Op(op));
                i += len;
            }
            '"' | '\'' => {
                let mut s = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(bad("a quoted string is not closed".into())),
                        Some('\\') => {
                            if let Some(&n) = chars.get(i + 1) {
                                s.push(n);
                            }
                            i += 2;
                        }
                        Some(&q) if q == c => {
                            i += 1;
                            break;
                        }
                        Some(&ch) => {
                            s.push(ch);
                            i += 1;
                        }
                    }
                }
                out.push(Token::Str(s));
            }
            c if c.is_ascii_digit() || c == '-' || c == '.' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric()
                        || matches!(chars[i], '-' | '.' | ':' | '+'))
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                // Numbers stay numbers; date-like words (2024-05-01) become strings.
                out.push(match word.parse::<f64>() {
                    Ok(n) => Token::Num(n),
                    Err(_) => Token::Str(word),
                });
            }
            c if c.is_alphanumeric() || c == '_' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '.' | '-'))
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                out.push(match word.to_ascii_uppercase().as_str() {
                    "AND" => Token::And,
                    "OR" => Token::Or,
                    "NOT" => Token::Not,
                    "IN" => Token::Op(Op::In),
                    _ => Token::Ident(word),
                });
            }
            other => return Err(bad(format!("unexpected character {other:?}"))),
        }
    }
    if out.is_empty() {
        return Err(bad("the expression is empty".into()));
    }
    Ok(out)
}

fn push(out: &mut Vec<Token>, i: &mut usize, t: Token) {
    out.push(t);
    *i += 1;
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    /// Open parentheses and `NOT`s around the current position.
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn or(&mut self) -> Result<Filter> {
        let mut parts = vec![self.and()?];
        while self.peek() == Some(&Token::Or) {
            self.pos += 1;
            parts.push(self.and()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Filter::Or(parts)
        })
    }

    fn and(&mut self) -> Result<Filter> {
        let mut parts = vec![self.unary()?];
        while self.peek() == Some(&Token::And) {
            self.pos += 1;
            parts.push(self.unary()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Filter::And(parts)
        })
    }

    fn unary(&mut self) -> Result<Filter> {
        match self.next() {
            Some(Token::Not) => {
                let inner = self.nested(Self::unary)?;
                Ok(Filter::Not(Box::new(inner)))
            }
            Some(Token::LParen) => {
                let f = self.nested(Self::or)?;
                match self.next() {
                    Some(Token::RParen) => Ok(f),
                    _ => Err(bad("a '(' is not closed".into())),
                }
            }
            Some(Token::Ident(field)) => self.condition(field),
            Some(t) => Err(bad(format!(
                "expected a field name, found {}",
                t.describe()
            ))),
            None => Err(bad("the expression ends too early".into())),
        }
    }

    /// Runs `parse` one level deeper, refusing past `MAX_FILTER_DEPTH`.
    fn nested(&mut self, parse: fn(&mut Self) -> Result<Filter>) -> Result<Filter> {
        if self.depth >= MAX_FILTER_DEPTH {
            return Err(too_deep());
        }
        self.depth += 1;
        let f = parse(self);
        self.depth -= 1;
        f
    }

    fn condition(&mut self, field: String) -> Result<Filter> {
        let negate_in = if self.peek() == Some(&Token::Not) {
            self.pos += 1;
            true
        } else {
            false
        };
        let op = match self.next() {
            Some(Token::Op(op)) => op,
            _ => {
                return Err(bad(format!(
                    "expected an operator (=, !=, <, <=, >, >=, IN) after {field:?}"
                )))
            }
        };
        let value = if op == Op::In {
            self.list()?
        } else {
            if negate_in {
                return Err(bad("NOT after a field name must be followed by IN".into()));
            }
            self.value()?
        };
        let op = if negate_in { Op::NotIn } else { op };
        Ok(Filter::Cond { field, op, value })
    }

    fn list(&mut self) -> Result<Value> {
        if self.next() != Some(Token::LBracket) {
            return Err(bad("IN takes a list: IN [\"a\", \"b\"]".into()));
        }
        let mut items = Vec::new();
        loop {
            if self.peek() == Some(&Token::RBracket) {
                self.pos += 1;
                break;
            }
            items.push(self.value()?);
            match self.next() {
                Some(Token::Comma) => {}
                Some(Token::RBracket) => break,
                _ => return Err(bad("a list is not closed with ']'".into())),
            }
        }
        Ok(Value::Array(items))
    }

    fn value(&mut self) -> Result<Value> {
        match self.next() {
            Some(Token::Str(s)) => Ok(Value::String(s)),
            Some(Token::Num(n)) => Ok(serde_json::Number::from_f64(n)
                .map(Value::Number)
                .unwrap_or(Value::Null)),
            Some(Token::Ident(w)) => Ok(match w.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                "null" => Value::Null,
                _ => Value::String(w),
            }),
            Some(t) => Err(bad(format!("expected a value, found {}", t.describe()))),
            None => Err(bad("a value is missing at the end".into())),
        }
    }
}

const SCOPE_FIELDS: [&str; 3] = ["user_id", "agent_id", "run_id"];

/// Mem0's v2 clients put the scope in the filters (`{"AND":[{"user_id":"u"}]}`).
/// For each of user_id / agent_id / run_id not given at the top level, an
/// equality on a string at the filter's top (or in a top-level AND) is
/// taken out of the filter and used as the scope.
pub fn lift_scope(filters: &mut Option<Value>, ids: [&mut Option<String>; 3]) {
    let Some(Value::Object(top)) = filters else {
        return;
    };
    for (field, slot) in SCOPE_FIELDS.iter().zip(ids) {
        if slot.is_some() {
            continue;
        }
        if let Some(Value::String(v)) = top.get(*field) {
            *slot = Some(v.clone());
            top.remove(*field);
            continue;
        }
        let Some(Value::Array(items)) = top.get_mut("AND") else {
            continue;
        };
        let found = items.iter().position(|item| {
            item.as_object()
                .is_some_and(|o| o.len() == 1 && o.get(*field).is_some_and(Value::is_string))
        });
        if let Some(i) = found {
            let item = items.remove(i);
            *slot = item.get(*field).and_then(Value::as_str).map(str::to_string);
        }
    }
    if let Some(Value::Array(items)) = top.get("AND") {
        if items.is_empty() {
            top.remove("AND");
        }
    }
}

#[cfg(test)]
mod lift_tests {
    use super::*;

    #[test]
    fn scope_comes_out_of_mem0_filters() {
        let mut f = Some(serde_json::json!({"AND": [{"user_id": "alice"}, {"topic": "food"}]}));
        let (mut u, mut a, mut r) = (None, None, Some("s1".to_string()));
        lift_scope(&mut f, [&mut u, &mut a, &mut r]);
        assert_eq!(u.as_deref(), Some("alice"));
        assert_eq!(a, None);
        assert_eq!(r.as_deref(), Some("s1"));
        assert_eq!(f, Some(serde_json::json!({"AND": [{"topic": "food"}]})));

        let mut f = Some(serde_json::json!({"user_id": "bob", "agent_id": "x"}));
        let (mut u, mut a, mut r) = (Some("carol".to_string()), None, None);
        lift_scope(&mut f, [&mut u, &mut a, &mut r]);
        // A top-level user_id wins; the filter's stays a condition.
        assert_eq!(u.as_deref(), Some("carol"));
        assert_eq!(a.as_deref(), Some("x"));
        assert_eq!(f, Some(serde_json::json!({"user_id": "bob"})));
    }
}
