//! What a server offers, as the protocol shows it ([`Catalog`]): its tools with what each
//! needs (client capabilities, deadline, background delay, slots), its prompts and
//! resources, and the built-in job tools, `job_wait`, `job_cancel` and `jobs` (README "Long
//! runs: Jobs"), as catalog entries ([`Catalog::add_job_tools`]). A leaf of the peer: the
//! server role answers the job tools itself (`server_role::jobs`), from the job store.

use std::time::Duration;

use serde_json::json;

use super::jobs::{WAIT_DEFAULT, WAIT_MAX};
use super::timeout::Timeout;
use crate::mcp::{Implementation, Prompt, Resource, ResourceTemplate, Tool};

/// What a server offers, as the protocol shows it. Handlers live elsewhere, by index.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Catalog {
    /// `serverInfo`.
    pub server_info: Implementation,
    /// `instructions` (2025-03-26+).
    pub instructions: Option<String>,
    /// The tools, in the order `tools/list` shows them.
    pub tools: Vec<Tool>,
    /// The prompts.
    pub prompts: Vec<Prompt>,
    /// The resources.
    pub resources: Vec<Resource>,
    /// The resource templates.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Client capabilities each tool needs (`"sampling"`, `"elicitation"`, `"roots"`), by
    /// tool index; a call without them is refused before it starts.
    pub tool_requirements: Vec<Vec<String>>,
    /// How long each tool's calls may run, by tool index (missing: no deadline). When a
    /// call's deadline passes, the peer emits
    /// [`Effect::Deadline`](super::Effect::Deadline).
    pub tool_timeouts: Vec<Option<Timeout>>,
    /// Background delay of each tool's calls, by tool index (missing: none): a call still
    /// running after it becomes a job (README "Long runs").
    pub tool_background: Vec<Option<Duration>>,
    /// Slots of `max_running` each tool's calls take, by tool index (missing: one): a
    /// portfolio takes one per member, all at once (README "Portfolios").
    pub tool_slots: Vec<usize>,
    /// The built-in job tools, once [`Catalog::add_job_tools`] added them.
    pub job_tools: Option<JobTools>,
}

impl Catalog {
    /// The index of the tool called `name`.
    pub fn tool_index(&self, name: &str) -> Option<usize> {
        self.tools.iter().position(|t| t.name == name)
    }
}

/// Names of the built-in job tools.
pub const JOB_TOOL_NAMES: [&str; 3] = ["job_wait", "job_cancel", "jobs"];

/// Indices of the job tools in the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobTools {
    /// `job_wait`.
    pub wait: usize,
    /// `job_cancel`.
    pub cancel: usize,
    /// `jobs`.
    pub list: usize,
}

/// A tool of the catalog has the name of a built-in job tool, which is reserved when some
/// tool has a background delay ([`Catalog::add_job_tools`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReservedToolName(pub String);

impl std::fmt::Display for ReservedToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tool name {} is reserved for the built-in job tools when a tool has a background delay",
            self.0
        )
    }
}

impl std::error::Error for ReservedToolName {}

impl Catalog {
    /// True when some tool may become a job.
    pub fn has_background(&self) -> bool {
        self.tool_background.iter().any(Option::is_some)
    }

    /// Adds `job_wait`, `job_cancel` and `jobs` when some tool may become a job. A tool of
    /// the catalog with one of these names is an error (the names are reserved then).
    ///
    /// A tool that may become a job is listed without its `outputSchema`: its answer may be a
    /// job status, which the schema does not describe, and clients check results against a
    /// declared schema (the Python and TypeScript SDKs refuse a result without the structured
    /// content it promises). Its results still carry their `structuredContent`.
    pub fn add_job_tools(&mut self) -> Result<(), ReservedToolName> {
        if !self.has_background() || self.job_tools.is_some() {
            return Ok(());
        }
        for (tool, background) in self.tools.iter_mut().zip(&self.tool_background) {
            if background.is_some() {
                tool.output_schema = None;
            }
        }
        if let Some(n) = JOB_TOOL_NAMES.iter().find(|n| self.tool_index(n).is_some()) {
            return Err(ReservedToolName((*n).to_owned()));
        }
        let id = json!({ "type": "string", "description": "The job's id, as the call that started it said (job-N)." });
        let defs = [
            (
                "Wait for a background job (a tool call that outlived the client's patience) to finish, and return its result as the tool itself would have. Returns after at most `seconds` with the job's state and latest output if it is still running; call it again then.",
                json!({ "type": "object", "properties": { "id": id, "seconds": {
                    "type": "integer", "minimum": 1, "maximum": WAIT_MAX.as_secs(),
                    "description": format!("How long to wait at most (default {}).", WAIT_DEFAULT.as_secs()) } },
                    "required": ["id"], "additionalProperties": false }),
            ),
            (
                "Stop a background job and the processes it started, as cancelling the call would have.",
                json!({ "type": "object", "properties": { "id": id }, "required": ["id"], "additionalProperties": false }),
            ),
            (
                "List the background jobs: id, tool, state, elapsed seconds and latest output line.",
                json!({ "type": "object", "properties": {}, "additionalProperties": false }),
            ),
        ];
        let first = self.tools.len();
        for (name, (description, schema)) in JOB_TOOL_NAMES.iter().zip(defs) {
            self.tools.push(Tool {
                name: (*name).to_owned(),
                title: None,
                description: Some(description.to_owned()),
                input_schema: schema,
                output_schema: None,
                annotations: None,
                icons: None,
                meta: None,
            });
            self.tool_requirements.push(Vec::new());
            self.tool_timeouts.push(None);
            self.tool_background.push(None);
            self.tool_slots.push(1);
        }
        self.job_tools = Some(JobTools {
            wait: first,
            cancel: first + 1,
            list: first + 2,
        });
        Ok(())
    }
}
