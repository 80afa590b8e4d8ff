//! Only for tests: the cfgs of the tools they need (`agl_test_tools::emit_cfgs`). Without them
//! those tests are ignored, with the reason, except under `CI=true`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a build script: a failure stops the build with its reason"
)]

fn main() {
    agl_test_tools::emit_cfgs(&[agl_test_tools::Tool::Postgres]);
}
