//! storbench-report
