//! `agl-c-guest`: the command line of the C agent build (see the crate's lib.rs and sdk/README.md).
//!
//! ```text
//! agl-c-guest build examples/c-agent -o c_agent.wasm   # bindings + clang + componentize
//! agl-c-guest bindings -o include/                     # only the C bindings (for wasi-sdk)
//! agl-c-guest componentize module.wasm -o agent.wasm   # only the p1 module -> component step
//! agl-c-guest check                                    # is clang + wasi-libc usable?
//! ```

use agl_c_guest::{Toolchain, bindings, componentize, wit};
use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "agl-c-guest",
    about = "Build C agents into agl:agent components (WASI preview 1 + adapter)"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build the C agent in DIR (its top-level .c files) into a component.
    Build {
        dir: PathBuf,
        /// The component to write.
        #[arg(short, long)]
        out: PathBuf,
        #[command(flatten)]
        toolchain: ToolchainArgs,
    },
    /// Write the C bindings of the agent world (agent.h, agent.c, agent_component_type.o).
    Bindings {
        /// The folder to write them to.
        #[arg(short, long)]
        out: PathBuf,
        /// A WIT folder to read instead of the embedded agl:agent WIT.
        #[arg(long)]
        wit: Option<PathBuf>,
        /// The world.
        #[arg(long, default_value = wit::AGENT_WORLD)]
        world: String,
    },
    /// Turn a WASI preview 1 reactor module (linked with the bindings) into a component.
    Componentize {
        module: PathBuf,
        #[arg(short, long)]
        out: PathBuf,
    },
    /// Check that clang, wasm-ld and the WASI libc work (compiles and links a probe).
    Check {
        #[command(flatten)]
        toolchain: ToolchainArgs,
    },
}

#[derive(Args)]
struct ToolchainArgs {
    /// The clang binary.
    #[arg(long, env = "AGL_CLANG", default_value = "clang")]
    clang: PathBuf,
    /// The WASI sysroot (not needed with Debian's wasi-libc).
    #[arg(long, env = "WASI_SYSROOT")]
    sysroot: Option<PathBuf>,
    /// Extra clang flags, e.g. --cflag=-DDEBUG.
    #[arg(long = "cflag", allow_hyphen_values = true)]
    cflags: Vec<String>,
}

impl ToolchainArgs {
    fn toolchain(self) -> Toolchain {
        Toolchain {
            clang: self.clang,
            sysroot: self.sysroot,
            extra_flags: self.cflags,
        }
    }
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Cmd::Build { dir, out, toolchain } => {
            let built = agl_c_guest::build_agent(&dir, &out, &toolchain.toolchain())?;
            eprint!("{}", built.warnings);
            eprintln!(
                "built C agent {} -> {} ({} bytes)",
                dir.display(),
                built.component.display(),
                built.component_bytes
            );
        }
        Cmd::Bindings { out, wit, world } => {
            let (mut resolve, world) = wit::load(wit.as_deref(), &world)?;
            let generated = bindings::generate(&mut resolve, world, &out)?;
            for path in &generated.files {
                eprintln!("wrote {}", path.display());
            }
        }
        Cmd::Componentize { module, out } => {
            let bytes = std::fs::read(&module).with_context(|| format!("reading {}", module.display()))?;
            let component = componentize::componentize(&bytes, &module)?;
            std::fs::write(&out, &component).with_context(|| format!("writing {}", out.display()))?;
            eprintln!("wrote {} ({} bytes)", out.display(), component.len());
        }
        Cmd::Check { toolchain } => {
            let toolchain = toolchain.toolchain();
            let scratch = std::env::temp_dir().join(format!("agl-c-guest-check-{}", std::process::id()));
            let result = toolchain.check(&scratch);
            let _ = std::fs::remove_dir_all(&scratch);
            result?;
            eprintln!("{} builds WASI preview 1 reactors", toolchain.clang.display());
        }
    }
    Ok(())
}
