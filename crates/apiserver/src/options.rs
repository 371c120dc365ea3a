//! Server options. TO BE IMPLEMENTED (serving helper).

/// The server's configuration, filled from the CLI.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    pub data_dir: std::path::PathBuf,
}
