//! Label selectors. TO BE IMPLEMENTED.
