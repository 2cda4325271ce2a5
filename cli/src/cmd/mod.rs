//! One module per subcommand. Each exposes `Args` (clap) and `run(Args) -> Res<u8>`.

pub mod diff;
pub mod dump;
mod forward;
pub mod hunt;
pub mod info;
pub mod inputs;
pub mod launch;
pub mod recordings;
pub mod runtime;
pub mod timeline;
pub mod verify;
