//! TODO: member_object
