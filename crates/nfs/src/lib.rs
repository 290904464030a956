//! storbench-nfs
