//! template (to be written).
