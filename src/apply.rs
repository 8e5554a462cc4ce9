//! Walks the plan: the one place where store, transport and bench meet.
