//! The virtual lab: boards made of network namespaces, each running a real sshd.
