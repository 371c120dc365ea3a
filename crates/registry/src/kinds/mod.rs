//! Built-in kinds: their `ResourceInfo` and strategies. TO BE IMPLEMENTED.
