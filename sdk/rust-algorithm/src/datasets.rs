//! Helpers on [`Datasets`], the tasks the user gave (one JSON text per task, train and val).

use serde::de::DeserializeOwned;

use crate::{Datasets, Error, Result};

impl Datasets {
    /// The number of tasks, both splits together.
    pub fn len(&self) -> usize {
        self.train.len() + self.val.len()
    }

    /// Whether both splits are empty.
    pub fn is_empty(&self) -> bool {
        self.train.is_empty() && self.val.is_empty()
    }

    /// The train tasks parsed into `T` (to look at them; enqueue the JSON text as it is).
    pub fn parse_train<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        parse_split("train", &self.train)
    }

    /// The val tasks parsed into `T`.
    pub fn parse_val<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        parse_split("val", &self.val)
    }
}

fn parse_split<T: DeserializeOwned>(split: &str, tasks: &[String]) -> Result<Vec<T>> {
    tasks
        .iter()
        .enumerate()
        .map(|(index, text)| {
            serde_json::from_str(text).map_err(|err| {
                Error::new(format!(
                    "{split} task {} does not match {}: {err}",
                    index + 1,
                    std::any::type_name::<T>()
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_count_both_splits() {
        let data = Datasets {
            train: vec!["1".into(), "2".into()],
            val: vec!["3".into()],
        };
        assert_eq!(data.len(), 3);
        assert!(!data.is_empty());
        assert!(
            Datasets {
                train: vec![],
                val: vec![]
            }
            .is_empty()
        );
    }

    #[test]
    fn tasks_parse_and_a_bad_one_is_numbered() {
        let data = Datasets {
            train: vec!["1".into(), "2".into()],
            val: vec!["3".into(), "\"x\"".into()],
        };
        assert_eq!(data.parse_train::<u32>().unwrap(), [1, 2]);
        let err = data.parse_val::<u32>().unwrap_err();
        assert!(
            err.message().starts_with("val task 2 does not match u32: invalid type"),
            "{err}"
        );
    }
}
