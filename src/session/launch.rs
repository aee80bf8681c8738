//! What a session's program starts with: its kind's argument template and environment, with
//! the start parameters' values put in (checked as a tool's arguments are).

use std::ffi::OsString;

use crate::spec::SessionKind;

/// What a session's program starts with: the arguments after the program, and the
/// variables its start parameters set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Launch {
    /// The argument template with the start parameters' values put in.
    pub argv: Vec<OsString>,
    /// Variables set by start parameters (`env`), over the kind's environment.
    pub env: Vec<(OsString, OsString)>,
    /// The start parameters as given (shown by `K_start`).
    pub given: serde_json::Map<String, serde_json::Value>,
    /// Inputs sent after the kind's startup inputs (a project's).
    pub inputs: Vec<String>,
    /// What the program may write: the values of start parameters with `"write": true`
    /// (root and checked path).
    pub writable: Vec<(std::path::PathBuf, std::path::PathBuf)>,
}

/// What the project of a proof file adds to its session's program (README "Proof files:
/// projects"): arguments after the launch's, inputs after the startup inputs.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ProjectLaunch {
    /// The project file, relative to the kind's root (for what the cursor says).
    pub file: String,
    /// Arguments after the launch's.
    pub argv: Vec<OsString>,
    /// Inputs after the startup inputs.
    pub inputs: Vec<String>,
}

impl Launch {
    /// This launch with `project`'s arguments and inputs added.
    pub(crate) fn with(mut self, project: Option<&ProjectLaunch>) -> Launch {
        if let Some(p) = project {
            self.argv.extend(p.argv.iter().cloned());
            self.inputs.extend(p.inputs.iter().cloned());
        }
        self
    }
}

impl SessionKind {
    /// The launch for start parameters `given` (checked as a tool's arguments are).
    pub fn launch(
        &self,
        given: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Launch, String> {
        let (argv, env, writable) =
            crate::call::plan::start_plan(&self.params, &self.args, &self.roots, &given)
                .map_err(|e| format!("Refused: {e}. Nothing was started."))?;
        Ok(Launch {
            argv,
            env,
            given,
            inputs: Vec::new(),
            writable,
        })
    }
}
