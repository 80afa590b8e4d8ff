//! Every `agl:agent@0.1.0` import served by its current implementation, for the agent state and
//! the algorithm state alike (the macros of `crate::older`, one per interface).

use super::agent::{llm as old_llm, resources as old_resources, reward as old_reward, trace as old_trace};
use super::algorithm::{adapter as old_adapter, progress as old_progress, store as old_store};
use crate::algorithm::AlgorithmState;
use crate::algorithm::bindings::{adapter as new_adapter, progress as new_progress, store as new_store};
use crate::bindings::{llm as new_llm, resources as new_resources, reward as new_reward, trace as new_trace};
use crate::older::{
    Convert, serve_adapter, serve_llm, serve_progress, serve_resources, serve_reward, serve_store, serve_trace,
};
use crate::state::HostState;

serve_llm!(HostState, AlgorithmState);
serve_reward!(HostState);
serve_resources!(HostState);
serve_trace!(HostState, AlgorithmState);
serve_progress!(AlgorithmState);
serve_store!(AlgorithmState);
serve_adapter!(AlgorithmState);
