//! Publishing candidates as resources versions `v0`, `v1`, ...: the base resources (the latest
//! the user gave) with some prompt templates replaced. APO replaces one template per version,
//! GEPA every component of a candidate. Ids are handed out in order, so a resumed run (the same
//! calls on a replayed store) names its versions as the stopped one did.

use crate::{Host, PromptTemplate, Resources, Result};

/// Publishes resources versions `v0`, `v1`, ... over `base`.
#[derive(Debug)]
pub struct Versions<'a> {
    host: &'a Host,
    base: Resources,
    next: u32,
}

impl<'a> Versions<'a> {
    /// Versions over `base`; the first one published is `v0`.
    pub fn new(host: &'a Host, base: Resources) -> Self {
        Versions { host, base, next: 0 }
    }

    /// The id the next version will get.
    pub fn next_id(&self) -> String {
        format!("v{}", self.next)
    }

    /// Publishes the base resources with `templates` (name, template) set; returns the new id.
    pub fn publish<'t>(
        &mut self,
        templates: impl IntoIterator<Item = (&'t str, &'t PromptTemplate)>,
    ) -> Result<String> {
        let id = self.next_id();
        self.next += 1;
        let mut resources = self.base.clone();
        for (name, template) in templates {
            resources.set_prompt_template(name, template);
        }
        self.host.update_resources(&id, &resources)?;
        Ok(id)
    }
}
