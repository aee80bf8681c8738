//! What the tests and the fuzz targets reach of the command: the manifest loader and what a
//! call plans from it. Not a stable API.

pub use crate::call::plan::plan;
pub use crate::call::schema::tool_definitions;
pub use crate::spec::Manifest;
