//! One module per subcommand. Each exposes `Args` (clap) and `run(Args) -> Res<u8>`.

pub mod diff;
pub mod dump;
pub mod info;
pub mod launch;
pub mod timeline;
pub mod verify;
