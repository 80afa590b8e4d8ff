//! A test guest that exports a `rollout` of the wrong shape (its own tiny world in `wit/`, not
//! `agl:agent`): the host must refuse to load it as an agent, with a clear message, rather than
//! trap or misread it. Built with wit-bindgen directly, without the SDK.

wit_bindgen::generate!({
    path: "wit",
    world: "wrong",
});

struct WrongWorld;

impl Guest for WrongWorld {
    fn rollout(task: String) -> String {
        task
    }
}

export!(WrongWorld);
