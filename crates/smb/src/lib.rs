//! storbench-smb
