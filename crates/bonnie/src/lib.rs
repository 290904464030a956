//! storbench-bonnie
