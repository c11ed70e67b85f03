//! data (to be written).
