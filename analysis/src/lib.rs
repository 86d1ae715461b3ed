//! Result files to charts.
