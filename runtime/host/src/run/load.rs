//! The components built (guest folders) and loaded into one engine, checked against the LLM they
//! need, and named for the user.

use super::Target;
use super::plan::Plan;
use crate::args::CommonArgs;
use crate::components::{self, AgentPlan, file_name};
use agl_wasm::{AgentComponent, AlgorithmComponent};

/// The loaded components.
pub(super) struct Loaded {
    /// The agent's plan (none with `--store URL`): runner processes load it from its path.
    pub agent_plan: Option<AgentPlan>,
    pub agent: Option<AgentComponent>,
    pub algorithm: AlgorithmComponent,
    /// How to name the agent and the algorithm to the user (and in the run record).
    pub agent_name: String,
    pub algo_name: String,
}

pub(super) fn load(plan: &Plan, common: &CommonArgs, target: &Target<'_>) -> anyhow::Result<Loaded> {
    let agent_plan = plan
        .agent_source
        .as_ref()
        .map(|source| components::plan_agent(source, &common.sandbox))
        .transpose()?;
    let algorithm_plan = components::plan_algorithm(&plan.algo_source, &common.sandbox)?;
    let fuel = agent_plan
        .as_ref()
        .is_some_and(|plan| plan.policy.limits.fuel.is_some());
    // The pool is sized for the larger of the two components, per instance.
    let shape = agent_plan
        .as_ref()
        .map_or(algorithm_plan.shape, |plan| plan.shape.max(algorithm_plan.shape));
    let host = components::engine(fuel, u32::from(common.runners) + 16, shape)?;
    let agent = agent_plan
        .as_ref()
        .map(|plan| components::load_agent(&host, plan))
        .transpose()?;
    let algorithm = components::load_algorithm(&host, &algorithm_plan)?;
    // Both fit their worlds; now, can they run?
    if let Some(agent) = &agent {
        components::require_llm(agent, "agent", &common.llm)?;
    }
    components::require_llm(&algorithm, "algorithm", &common.llm)?;
    let agent_name = match (&agent_plan, target) {
        (Some(plan), _) => file_name(&plan.path),
        (None, Target::RemoteStore { url, .. }) => format!("the runners of {url}"),
        (None, Target::Agent(path)) => file_name(path),
    };
    let algo_name = algorithm.name().to_owned();
    Ok(Loaded {
        agent_plan,
        agent,
        algorithm,
        agent_name,
        algo_name,
    })
}
