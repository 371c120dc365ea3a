//! reviews (todo)
