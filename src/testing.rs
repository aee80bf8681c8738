//! What the tests and the fuzz targets reach of the command: the manifest loader and what a
//! call plans from it. Not a stable API.

pub use crate::call::plan::plan;
pub use crate::call::schema::tool_definitions;
/// Cuts any text as a proof file with the example cursors and checks what must hold.
pub use crate::cursor::invariants::check_examples as cut_proof_file;
pub use crate::spec::Manifest;
