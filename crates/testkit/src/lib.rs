//! storbench-testkit
