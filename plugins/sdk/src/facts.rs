//! facts (to be written).
