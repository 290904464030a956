//! storbench-store
