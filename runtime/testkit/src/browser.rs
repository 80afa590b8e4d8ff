//! A headless Chromium for tests, driven over WebDriver (`thirtyfour`): one `chromedriver` (on a
//! free port) and one browser session per test, with bounded waits for what a page shows and
//! screenshots kept as test artifacts. This module owns finding and starting the browser and
//! reading pages; it knows nothing of what a page should hold.
//!
//! # How a test drives a page
//!
//! ```no_run
//! # async fn demo() {
//! // The test carries #[agl_testkit::needs(chromium)]: ignored where there is no browser.
//! let browser = agl_testkit::browser::Browser::start("my_test").await;
//! browser.open("http://127.0.0.1:4747/rollouts").await;
//! browser.wait_for_text("ro-1").await; // polls until the page shows it, or panics after a bound
//! browser.click("a[href='/traces']").await;
//! browser.screenshot("traces").await; // target/browser-screenshots/my_test/traces.png
//! browser.quit().await;
//! # }
//! ```
//!
//! # Where the browser comes from
//!
//! `chromedriver` and `chromium` (Debian's `chromium-driver` and `chromium` packages; also
//! `chromium-browser`, `google-chrome`) are looked for on `PATH`, or named by
//! `AGL_TEST_CHROMEDRIVER` / `AGL_TEST_CHROMIUM` (a name that is not a file fails the test); finding
//! them is `agl_test_tools::browser`'s. When either is missing, [`Browser::start`] panics, saying
//! what is missing. A test that needs a browser carries `#[agl_testkit::needs(chromium)]`, so it
//! is ignored, with the reason, where the build found none, and runs (and fails without one)
//! under `CI=true`, where `.ci/run` installs both: never a silent skip.
//!
//! `chromedriver --port=0` picks its own port and says which; it runs in a process group of its
//! own, killed with the browser it started when the [`Browser`] is dropped (a failed test
//! included). The browser gets a fresh profile folder, a 1280×900 window, and `--no-sandbox`
//! (tests run as root in CI).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use thirtyfour::prelude::*;

pub use agl_test_tools::browser::{CHROMEDRIVER_VAR, CHROMIUM_VAR};

/// How long a wait ([`Browser::wait_for`], [`Browser::wait_for_text`]...) lasts before it fails:
/// generous, for a loaded 2-core CI machine; a passing test never waits it out.
pub const WAIT: Duration = Duration::from_secs(30);
/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(100);
/// How long `chromedriver` may take to say it is listening.
const DRIVER_START: Duration = Duration::from_secs(20);

/// One browser session of one test, and its `chromedriver`.
pub struct Browser {
    driver: Option<WebDriver>,
    chromedriver: Child,
    screenshots: PathBuf,
    profile: PathBuf,
}

impl Browser {
    /// Starts `chromedriver` and a headless browser for the test `test` (its screenshots go to
    /// `target/browser-screenshots/<test>/`).
    ///
    /// # Panics
    /// When they are not installed (the test should carry `#[agl_testkit::needs(chromium)]`,
    /// which ignores it on such a machine outside CI), and whenever installed ones fail to start.
    pub async fn start(test: &str) -> Browser {
        let (chromedriver, chromium) = match (
            agl_test_tools::browser::chromedriver(),
            agl_test_tools::browser::chromium(),
        ) {
            (Ok(chromedriver), Ok(chromium)) => (chromedriver, chromium),
            (Err(why), _) | (_, Err(why)) => panic!("{}", crate::missing(crate::Tool::Chromium, &why)),
        };
        let target = crate::target_dir().unwrap_or_else(std::env::temp_dir);
        let screenshots = target.join("browser-screenshots").join(test);
        let _ = std::fs::remove_dir_all(&screenshots);
        std::fs::create_dir_all(&screenshots).unwrap_or_else(|e| panic!("creating {}: {e}", screenshots.display()));
        let profile = target
            .join("tmp")
            .join(format!("agl-browser-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&profile);
        let (child, port) = start_chromedriver(&chromedriver);
        let mut browser = Browser {
            driver: None,
            chromedriver: child,
            screenshots,
            profile,
        };
        let capabilities = capabilities(&chromium, &browser.profile)
            .unwrap_or_else(|e| panic!("browser options for {}: {e}", chromium.display()));
        let driver = WebDriver::new(format!("http://127.0.0.1:{port}"), capabilities)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "{} does not start a session of {}: {e}",
                    chromedriver.display(),
                    chromium.display()
                )
            });
        browser.driver = Some(driver);
        browser
    }

    fn driver(&self) -> &WebDriver {
        self.driver.as_ref().expect("the session is open until quit")
    }

    /// Loads `url` (returns once the page's document has loaded; its scripts may still fetch).
    pub async fn open(&self, url: &str) {
        self.driver()
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("opening {url}: {e}"));
    }

    /// The first element matching the CSS selector `css`, once there is one.
    ///
    /// # Panics
    /// When none has appeared after [`WAIT`] (a screenshot of the page is taken first).
    pub async fn wait_for(&self, css: &str) -> WebElement {
        let found = self
            .poll(|| async { self.driver().find(By::Css(css)).await.ok() })
            .await;
        match found {
            Some(element) => element,
            None => self.fail(&format!("no element matches `{css}`")).await,
        }
    }

    /// Waits until the page's visible text contains `text`.
    ///
    /// # Panics
    /// When it has not after [`WAIT`] (with the page's text, and a screenshot).
    pub async fn wait_for_text(&self, text: &str) {
        self.wait_for_text_in("body", text).await;
    }

    /// Waits until the visible text of an element matching `css` contains `text` (e.g. a table's
    /// `tbody`, so that a menu entry of the same name does not count).
    ///
    /// # Panics
    /// When none does after [`WAIT`] (with the page's text, and a screenshot).
    pub async fn wait_for_text_in(&self, css: &str, text: &str) {
        let shown = self
            .poll(|| async {
                let elements = self.driver().find_all(By::Css(css)).await.ok()?;
                for element in elements {
                    if element.text().await.is_ok_and(|shown| shown.contains(text)) {
                        return Some(());
                    }
                }
                None
            })
            .await;
        if shown.is_none() {
            self.fail(&format!("no `{css}` ever showed {text:?}")).await;
        }
    }

    /// The visible text of the first element matching `css`, once there is one. The element is
    /// found again on every try: a page that redraws it meanwhile (live updates) makes the one
    /// found before stale, which is not a failure.
    ///
    /// # Panics
    /// When none can be read after [`WAIT`] (with the page's text, and a screenshot).
    pub async fn text(&self, css: &str) -> String {
        let text = self
            .poll(|| async {
                let element = self.driver().find(By::Css(css)).await.ok()?;
                element.text().await.ok()
            })
            .await;
        match text {
            Some(text) => text,
            None => self.fail(&format!("the text of `{css}` could not be read")).await,
        }
    }

    /// The visible text of the whole page (empty while there is no body).
    pub async fn page_text(&self) -> String {
        match self.driver().find(By::Css("body")).await {
            Ok(body) => body.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// Clicks the first element matching `css`, once there is one and it can be clicked (found
    /// again on every try, as in [`Browser::text`]).
    pub async fn click(&self, css: &str) {
        let clicked = self
            .poll(|| async {
                let element = self.driver().find(By::Css(css)).await.ok()?;
                element.click().await.ok()
            })
            .await;
        if clicked.is_none() {
            self.fail(&format!("`{css}` could not be clicked")).await;
        }
    }

    /// Clicks the first element of the page whose visible text is exactly `text` (a link, a
    /// button, a tab), once there is one.
    pub async fn click_text(&self, text: &str) {
        let found = self
            .poll(|| async {
                let elements = self.driver().find_all(By::XPath(text_xpath(text))).await.ok()?;
                for element in elements {
                    if element.is_displayed().await.unwrap_or(false) && element.click().await.is_ok() {
                        return Some(());
                    }
                }
                None
            })
            .await;
        if found.is_none() {
            self.fail(&format!("nothing that shows {text:?} could be clicked"))
                .await;
        }
    }

    /// The path and query of the page's URL (`/rollouts?x=1`).
    pub async fn path(&self) -> String {
        let url = self
            .driver()
            .current_url()
            .await
            .unwrap_or_else(|e| panic!("reading the page's URL: {e}"));
        match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        }
    }

    /// Writes a PNG of the window to `target/browser-screenshots/<test>/<name>.png`; returns its
    /// path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let path = self.screenshots.join(format!("{name}.png"));
        let png = self
            .driver()
            .screenshot_as_png()
            .await
            .unwrap_or_else(|e| panic!("taking the screenshot {name}: {e}"));
        std::fs::write(&path, png).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        path
    }

    /// The folder this test's screenshots go to.
    pub fn screenshots(&self) -> &Path {
        &self.screenshots
    }

    /// Ends the session (the browser closes) and stops `chromedriver`.
    pub async fn quit(mut self) {
        if let Some(driver) = self.driver.take() {
            let _ = driver.quit().await;
        }
    }

    /// Calls `probe` until it gives a value or [`WAIT`] has passed.
    async fn poll<T, F, Fut>(&self, mut probe: F) -> Option<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(value) = probe().await {
                return Some(value);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Panics with `what`, the page's URL and text, after a screenshot `failure.png`.
    async fn fail(&self, what: &str) -> ! {
        let shot = self.screenshot("failure").await;
        let url = self.path().await;
        let text = self.page_text().await;
        panic!(
            "{what} within {WAIT:?} on {url} (screenshot: {}); the page shows:\n{text}",
            shot.display()
        )
    }
}

impl Drop for Browser {
    /// Kills `chromedriver`'s process group (it and the browser it started) and removes the
    /// profile.
    fn drop(&mut self) {
        if let Ok(pid) = libc::pid_t::try_from(self.chromedriver.id()) {
            // SAFETY: kill(2) with the process group this Browser created (chromedriver leads it).
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = self.chromedriver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// An XPath for the elements whose own normalised text is `text` (quotes of either kind allowed).
fn text_xpath(text: &str) -> String {
    let literal = if !text.contains('\'') {
        format!("'{text}'")
    } else if !text.contains('"') {
        format!("\"{text}\"")
    } else {
        let parts: Vec<String> = text.split('\'').map(|part| format!("'{part}'")).collect();
        format!("concat({})", parts.join(", \"'\", "))
    };
    format!("//*[normalize-space(.)={literal} and not(*[normalize-space(.)={literal}])]")
}

/// Headless Chromium at `binary`, its profile in `profile`.
fn capabilities(binary: &Path, profile: &Path) -> WebDriverResult<thirtyfour::ChromeCapabilities> {
    let mut capabilities = DesiredCapabilities::chrome();
    capabilities.set_binary(&binary.to_string_lossy())?;
    for arg in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-extensions",
        "--no-first-run",
        "--no-default-browser-check",
        "--window-size=1280,900",
        &format!("--user-data-dir={}", profile.display()),
    ] {
        capabilities.add_arg(arg)?;
    }
    Ok(capabilities)
}

/// Starts `chromedriver --port=0` in a process group of its own; returns it and its port.
fn start_chromedriver(binary: &Path) -> (Child, u16) {
    use std::os::unix::process::CommandExt as _;
    let mut child = Command::new(binary)
        .args(["--port=0", "--allowed-ips=127.0.0.1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{} does not start: {e}", binary.display()));
    let stdout = child.stdout.take().expect("piped stdout");
    // Read on a thread: a silent chromedriver must not block the test past the bound.
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut said = String::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            said.push_str(&line);
            said.push('\n');
            // Then keep draining: chromedriver must never block on a full pipe.
            if let Some(port) = listening_port(&line) {
                let _ = sender.send(Ok(port));
            }
        }
        let _ = sender.send(Err(said));
    });
    match receiver.recv_timeout(DRIVER_START) {
        Ok(Ok(port)) => (child, port),
        Ok(Err(said)) => {
            let _ = child.kill();
            let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
            panic!("{} exited ({status}) before listening:\n{said}", binary.display())
        }
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} did not say its port within {DRIVER_START:?}", binary.display())
        }
    }
}

/// The port in chromedriver's "ChromeDriver was started successfully on port 37339." line.
fn listening_port(line: &str) -> Option<u16> {
    let (_, rest) = line.split_once("started successfully on port ")?;
    rest.trim_end_matches(|c: char| !c.is_ascii_digit()).parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_read_from_chromedrivers_line() {
        assert_eq!(
            listening_port("ChromeDriver was started successfully on port 37339."),
            Some(37339)
        );
        assert_eq!(listening_port("Only local connections are allowed."), None);
    }

    #[test]
    fn text_xpaths_quote_any_text() {
        assert!(text_xpath("Rollouts").contains("normalize-space(.)='Rollouts'"));
        assert!(text_xpath("it's").contains("normalize-space(.)=\"it's\""));
        assert!(text_xpath("a'b\"c").contains("concat('a', \"'\", 'b\"c')"));
    }
}
