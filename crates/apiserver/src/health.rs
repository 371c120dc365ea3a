//! TO BE IMPLEMENTED (serving helper).
