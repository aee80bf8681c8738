//! What a tool's or a session kind's programs may reach, as the manifest declares it
//! (`confine`, `readable`, `writable`, `network`, the roots it names and which of them are
//! writable: README "Security model"). The runner's [`Confinement`] of one run is made from
//! it, with the places of the run's writable path arguments.

use std::path::PathBuf;

use stdmcp::process::confine::{Confinement, Mode, Network};

/// What `defaults` says of confinement: every tool and session kind starts from it.
#[derive(Clone, Debug, Default)]
pub struct Declared {
    /// `confine`, if given.
    pub mode: Option<Mode>,
    /// `readable`, as written.
    pub readable: Vec<String>,
    /// `writable`, as written.
    pub writable: Vec<String>,
    /// `network`, if given.
    pub network: Option<Network>,
}

/// The confinement rules of a tool or session kind, resolved when the manifest is loaded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rules {
    /// `confine`: on (best effort), off, or require.
    pub mode: Mode,
    /// Read and execute: `readable` entries (the program's own directory is added by the
    /// runner).
    pub read_exec: Vec<PathBuf>,
    /// Read only: the roots the tool's parameters name, a fixed working directory.
    pub read: Vec<PathBuf>,
    /// Read and write: the writable roots the tool names, `writable` entries.
    pub write: Vec<PathBuf>,
    /// Path parameters whose value the program may write (`"write": true` on a parameter).
    pub write_params: Vec<String>,
    /// `network`: TCP denied, any, or some ports.
    pub network: Network,
}

impl Rules {
    /// The runner's confinement of one run under these rules (its writable path arguments
    /// added by the caller, as held places).
    pub fn confinement(&self) -> Confinement {
        let mut c = Confinement::new(self.mode);
        c.read_exec.clone_from(&self.read_exec);
        c.read.clone_from(&self.read);
        c.write.clone_from(&self.write);
        c.network = self.network.clone();
        c
    }

    /// One line for `stdmcp check`.
    pub fn describe(&self) -> String {
        if self.mode == Mode::Off {
            return "off (the program runs with the user's rights)".into();
        }
        let list = |v: &[PathBuf]| match v.is_empty() {
            true => "nothing more".to_owned(),
            false => v
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        };
        let mut write = list(&self.write);
        if !self.write_params.is_empty() {
            write.push_str(&format!(
                "; what parameter(s) {} name",
                self.write_params.join(", ")
            ));
        }
        let network = match &self.network {
            Network::Denied => "no TCP".to_owned(),
            Network::Any => "any".to_owned(),
            Network::Ports(p) => format!(
                "TCP ports {}",
                p.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
            ),
        };
        format!(
            "{}; reads and runs the system's directories, its program's and {}; reads {}; writes its private TMPDIR and {}; network: {network}",
            self.mode.name(),
            list(&self.read_exec),
            list(&self.read),
            write
        )
    }
}
