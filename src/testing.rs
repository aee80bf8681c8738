//! What the tests, the fuzz targets and the `everything` example reach of the command: the
//! manifest loader and what a call plans from it, and the runtime's options from the
//! environment. Not a stable API.

pub use crate::call::plan::plan;
pub use crate::call::schema::tool_definitions;
pub use crate::options::from_env;
pub use crate::spec::Manifest;
