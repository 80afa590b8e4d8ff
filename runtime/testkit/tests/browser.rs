//! The browser harness on a page of its own (a file written under target/tmp): waits for text a
//! script adds late, clicks, reads text and the URL, and writes screenshots that are PNGs. Ignored
//! without Chromium and chromedriver, except under `CI=true`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

use agl_testkit::browser::Browser;

const PAGE: &str = r##"<!doctype html>
<title>harness</title>
<p id="late"></p>
<button id="go" onclick="document.getElementById('out').textContent = 'clicked ' + location.hash">Go</button>
<a href="#second">it's the second</a>
<p id="out"></p>
<script>setTimeout(() => { document.getElementById('late').textContent = 'arrived late'; }, 300);</script>
"##;

#[agl_testkit::needs(chromium)]
#[tokio::test]
async fn waits_clicks_reads_and_screenshots_a_page() {
    let browser = Browser::start("testkit_harness").await;
    let dir = agl_testkit::target_dir().expect("a target folder").join("tmp");
    std::fs::create_dir_all(&dir).expect("target/tmp");
    let page = dir.join(format!("agl-browser-harness-{}.html", std::process::id()));
    std::fs::write(&page, PAGE).expect("page written");

    browser.open(&format!("file://{}", page.display())).await;
    browser.wait_for_text("arrived late").await;
    assert_eq!(browser.text("#late").await, "arrived late");
    browser.click_text("it's the second").await;
    browser.click("#go").await;
    browser.wait_for_text("clicked #second").await;
    assert!(browser.path().await.ends_with(".html"), "{}", browser.path().await);

    let shot = browser.screenshot("page").await;
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{} is not a PNG", shot.display());
    assert!(shot.starts_with(browser.screenshots()));
    assert!(
        shot.ends_with("browser-screenshots/testkit_harness/page.png"),
        "{}",
        shot.display()
    );
    browser.quit().await;
    let _ = std::fs::remove_file(page);
}
