//! storbench-iscsi
