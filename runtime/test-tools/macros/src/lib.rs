//! Test attributes, re-exported by agl-testkit (use them from there):
//!
//! - `#[needs(postgres)]` (also `chromium`, `c_toolchain`; several, comma-separated), placed
//!   *above* `#[test]` or `#[tokio::test]`: the test is ignored, with what it needs and how to get
//!   it, unless the crate's build script found the tool (`agl_test_tools::emit_cfgs`) or `CI=true`.
//! - `#[each_backend]` on `fn name(backend: Backend)` (or `async fn`, with `#[tokio::test]`'s
//!   arguments as its own): one test per store backend, `name::memory`, `name::sqlite`,
//!   `name::postgres`, each ignored or run on its own (PostgreSQL's as `#[needs(postgres)]`).
//! - `postgres_test` and `postgres_tokio_test`: `#[test]` and `#[tokio::test]` that need
//!   PostgreSQL, for `agl_testkit::needs_postgres` to put in place of those names in a suite
//!   written for any backend.
//!
//! No syn: the attributes only read the function's name and whether it is `async`, and wrap its
//! tokens.

use agl_test_tools::{BACKENDS, Tool};
use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use std::str::FromStr as _;

/// `#[needs(tool, ...)]`: see the crate's doc.
#[proc_macro_attribute]
pub fn needs(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut tools = Vec::new();
    for token in attr {
        match token {
            TokenTree::Ident(ident) => match Tool::from_name(&ident.to_string()) {
                Some(tool) => tools.push(tool),
                None => {
                    let known: Vec<&str> = Tool::ALL.iter().map(|tool| tool.name()).collect();
                    return error(
                        ident.span(),
                        &format!("unknown tool `{ident}`: one of {}", known.join(", ")),
                    );
                }
            },
            TokenTree::Punct(punct) if punct.as_char() == ',' => {}
            other => return error(other.span(), "expected tool names: #[needs(postgres)]"),
        }
    }
    if tools.is_empty() {
        return error(Span::call_site(), "expected tool names: #[needs(postgres)]");
    }
    let mut out = ignore_without(&tools);
    out.extend(item);
    out
}

/// `#[test]` that needs PostgreSQL.
#[proc_macro_attribute]
pub fn postgres_test(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return error(Span::call_site(), "#[test] takes no arguments");
    }
    let mut out = ignore_without(&[Tool::Postgres]);
    out.extend(parse("#[::core::prelude::v1::test]"));
    out.extend(item);
    out
}

/// `#[tokio::test(...)]` that needs PostgreSQL.
#[proc_macro_attribute]
pub fn postgres_tokio_test(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut out = ignore_without(&[Tool::Postgres]);
    out.extend(tokio_test(attr));
    out.extend(item);
    out
}

/// `#[each_backend]`: see the crate's doc.
#[proc_macro_attribute]
pub fn each_backend(attr: TokenStream, item: TokenStream) -> TokenStream {
    let tokens: Vec<TokenTree> = item.clone().into_iter().collect();
    let Some(at) = tokens
        .iter()
        .position(|token| matches!(token, TokenTree::Ident(ident) if ident.to_string() == "fn"))
    else {
        return error(Span::call_site(), "#[each_backend] goes on a function");
    };
    let Some(TokenTree::Ident(name)) = tokens.get(at + 1) else {
        return error(Span::call_site(), "#[each_backend] goes on a named function");
    };
    let is_async = tokens[..at]
        .iter()
        .any(|token| matches!(token, TokenTree::Ident(ident) if ident.to_string() == "async"));
    if !is_async && !attr.is_empty() {
        return error(
            Span::call_site(),
            "#[each_backend(...)] takes #[tokio::test]'s arguments, for an async fn only",
        );
    }
    let mut tests = TokenStream::new();
    for (test, variant, tool) in BACKENDS {
        if let Some(tool) = tool {
            tests.extend(ignore_without(&[tool]));
        }
        if is_async {
            tests.extend(tokio_test(attr.clone()));
            tests.extend(parse(&format!(
                "async fn {test}() {{ super::{name}(::agl_testkit::Backend::{variant}).await }}"
            )));
        } else {
            tests.extend(parse(&format!(
                "#[::core::prelude::v1::test] fn {test}() {{ super::{name}(::agl_testkit::Backend::{variant}) }}"
            )));
        }
    }
    let mut out = item;
    out.extend(parse(&format!(
        "#[doc = \"`{name}` on each store backend.\"] mod {name}"
    )));
    out.extend([TokenTree::Group(Group::new(Delimiter::Brace, tests))]);
    out
}

/// `#[cfg_attr(not(agl_has_x), ignore = "needs x...")]`, one per tool, the first missing tool
/// giving the reason (a test has one `ignore`).
fn ignore_without(tools: &[Tool]) -> TokenStream {
    let mut out = TokenStream::new();
    for (index, tool) in tools.iter().enumerate() {
        let mut conditions: Vec<String> = tools[..index].iter().map(|tool| tool.cfg().to_owned()).collect();
        conditions.push(format!("not({})", tool.cfg()));
        out.extend(parse(&format!(
            "#[cfg_attr(all({}), ignore = {})]",
            conditions.join(", "),
            Literal::string(tool.ignore_reason())
        )));
    }
    out
}

/// `#[::tokio::test(attr)]`.
fn tokio_test(attr: TokenStream) -> TokenStream {
    let mut out = parse("#[::tokio::test]");
    if attr.is_empty() {
        return out;
    }
    let mut tokens: Vec<TokenTree> = out.into_iter().collect();
    let Some(TokenTree::Group(bracket)) = tokens.pop() else {
        unreachable!("an attribute ends with its brackets")
    };
    let mut inner: Vec<TokenTree> = bracket.stream().into_iter().collect();
    inner.push(TokenTree::Group(Group::new(Delimiter::Parenthesis, attr)));
    tokens.push(TokenTree::Group(Group::new(
        Delimiter::Bracket,
        inner.into_iter().collect(),
    )));
    out = tokens.into_iter().collect();
    out
}

#[allow(
    clippy::expect_used,
    reason = "the macro's own code, fixed at compile time: a failure is a bug in this crate"
)]
fn parse(code: &str) -> TokenStream {
    TokenStream::from_str(code).expect("the macro's own code parses")
}

/// `compile_error!(message)` at `span`.
fn error(span: Span, message: &str) -> TokenStream {
    let mut literal = Literal::string(message);
    literal.set_span(span);
    [
        TokenTree::Ident(Ident::new("compile_error", span)),
        TokenTree::Punct(Punct::new('!', Spacing::Alone)),
        TokenTree::Group(Group::new(Delimiter::Parenthesis, TokenTree::Literal(literal).into())),
        TokenTree::Punct(Punct::new(';', Spacing::Alone)),
    ]
    .into_iter()
    .collect()
}
