//! A cluster as the system under test: a scenario's `[clusters.NAME]`, a value on the
//! board axis whose cells run once per cluster configuration on all its member boards,
//! with a deploy and a teardown of its own around them.

use std::time::Duration;

use serde::Serialize;

use super::BoardName;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cluster {
    /// The name on the board axis; never the name of a board.
    pub name: BoardName,
    /// The member boards, in the order the scenario lists them (a glob's matches in
    /// name order); at least one, each once.
    pub members: Vec<BoardName>,
    /// The member where a test's `on = "board"` steps run (a K3s server node, where
    /// kubectl is); the first member unless `control` says.
    pub control: BoardName,
    /// What clients hit: controller-side steps get its host as `host`, and its port,
    /// when given, as the recipe's `port` parameter.
    pub endpoint: Endpoint,
    /// Run once before the cluster's first cell, in order.
    pub deploy: Vec<ClusterStep>,
    /// Run once after its last cell, in order; also after failures, interrupts and a
    /// lost member (each step where it can: a lost member's own steps are run by its
    /// guard).
    pub teardown: Vec<ClusterStep>,
}

impl Cluster {
    /// Whether `board` is one of the members.
    pub fn has_member(&self, board: &BoardName) -> bool {
        self.members.contains(board)
    }
}

/// `endpoint = { board = "lab-1", port = 8080 }` or `{ host = "10.0.0.5" }`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Endpoint {
    pub at: EndpointAt,
    pub port: Option<u16>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EndpointAt {
    /// A member, reached at its `[ssh] host` (`localhost` for a local board).
    Board(BoardName),
    /// A name or address of its own (an ingress, a virtual IP).
    Host(String),
}

/// One deploy or teardown command of a cluster.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClusterStep {
    pub on: Where,
    /// A minijinja template (see docs/FORMAT.md, "Clusters"); values are shell-quoted.
    pub command: String,
    pub timeout: Option<Duration>,
}

/// Where a cluster step runs: the controller, or one named member.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Where {
    Controller,
    Board(BoardName),
}

impl Where {
    /// `controller` or the member's name, as the files write it.
    pub fn name(&self) -> &str {
        match self {
            Where::Controller => "controller",
            Where::Board(b) => b.as_str(),
        }
    }
}

/// The variables of a cluster's deploy and teardown templates (see docs/FORMAT.md).
pub const CLUSTER_VARIABLES: [&str; 8] = [
    "cluster",
    "members",
    "endpoint_host",
    "endpoint_port",
    "board",
    "host",
    "workdir",
    "controller_dir",
];
