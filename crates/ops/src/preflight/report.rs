//! What `preflight` found: the checks passed (one line each) and the problems (each naming the
//! parameter it is about). Nothing here ever holds a secret's value: the lines are built from
//! parameter values, source and secret names, and the library's messages, which name a secret
//! by its position and reference only.

use std::fmt;

/// One reason the deploy is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The stack parameter (or the setting) it is about: `ForwardUrl`, `SecretArns`, ...
    pub subject: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.subject, self.message)
    }
}

/// Every check's outcome, in the order the checks ran.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    passed: Vec<String>,
    problems: Vec<Problem>,
    /// Said, and the deploy may still go ahead (events that would go nowhere, a bus with no
    /// rule for a source).
    warnings: Vec<Problem>,
    notes: Vec<String>,
}

impl Report {
    /// A check passed: `line` says what was checked and found right (the same line twice is
    /// kept once).
    pub fn pass(&mut self, line: impl Into<String>) {
        let line = line.into();
        if !self.passed.contains(&line) {
            self.passed.push(line);
        }
    }

    /// A problem with `subject` (a parameter's name); the same problem twice is kept once.
    pub fn refuse(&mut self, subject: impl Into<String>, message: impl Into<String>) {
        let problem = Problem {
            subject: subject.into(),
            message: message.into(),
        };
        if !self.problems.contains(&problem) {
            self.problems.push(problem);
        }
    }

    /// A warning about `subject`: printed with the outcome, refusing nothing; once.
    pub fn warn(&mut self, subject: impl Into<String>, message: impl Into<String>) {
        let warning = Problem {
            subject: subject.into(),
            message: message.into(),
        };
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }

    pub fn warnings(&self) -> &[Problem] {
        &self.warnings
    }

    fn warnings_text(&self) -> String {
        self.warnings
            .iter()
            .map(|w| format!("warning: {w}\n"))
            .collect()
    }

    /// Something the deploy may go ahead with but the operator must do after it (a pending
    /// source's secret to store); printed as a `note:` line either way.
    pub fn note(&mut self, line: impl Into<String>) {
        let line = line.into();
        if !self.notes.contains(&line) {
            self.notes.push(line);
        }
    }

    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    fn notes_text(&self) -> String {
        self.notes.iter().map(|n| format!("note: {n}\n")).collect()
    }

    /// How many problems so far (a check compares before and after to know whether it passed).
    pub fn problem_count(&self) -> usize {
        self.problems.len()
    }

    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    pub fn passed(&self) -> &[String] {
        &self.passed
    }

    pub fn is_ready(&self) -> bool {
        self.problems.is_empty()
    }

    /// The success output: a heading, one `ok:` line per check passed, a closing line.
    pub fn passed_text(&self, heading: &str) -> String {
        let mut text = format!("{heading}\n");
        for line in &self.passed {
            text.push_str("ok: ");
            text.push_str(line);
            text.push('\n');
        }
        text.push_str(&self.warnings_text());
        text.push_str(&self.notes_text());
        text.push_str(&format!(
            "preflight: {} checks passed; sam deploy may go ahead\n",
            self.passed.len()
        ));
        text
    }

    /// The refusal: a heading, then every problem on its own line, parameter first.
    pub fn problems_text(&self, heading: &str) -> String {
        let count = self.problems.len();
        let mut text = format!(
            "{heading}\npreflight: {count} problem{} (fix them before sam deploy):\n",
            if count == 1 { "" } else { "s" }
        );
        for problem in &self.problems {
            text.push_str("  - ");
            text.push_str(&problem.to_string());
            text.push('\n');
        }
        text.push_str(&self.warnings_text());
        text.push_str(&self.notes_text());
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_problem_once_and_names_its_parameter() {
        let mut report = Report::default();
        report.pass("ForwardUrl is https");
        assert!(report.is_ready());
        report.refuse("SecretArns", "holds the placeholder REGION");
        report.refuse("ForwardUrl", "not https://");
        report.refuse("SecretArns", "holds the placeholder REGION");
        assert_eq!(report.problem_count(), 2);
        let text = report.problems_text("preflight: stack s");
        assert_eq!(
            text,
            "preflight: stack s\npreflight: 2 problems (fix them before sam deploy):\n  - SecretArns: holds the placeholder REGION\n  - ForwardUrl: not https://\n"
        );
    }

    #[test]
    fn the_success_text_has_one_line_per_check() {
        let mut report = Report::default();
        report.pass("a");
        report.pass("b");
        assert_eq!(
            report.passed_text("h"),
            "h\nok: a\nok: b\npreflight: 2 checks passed; sam deploy may go ahead\n"
        );
        report.warn("Destinations", "stripe: customer.* goes nowhere");
        report.warn("Destinations", "stripe: customer.* goes nowhere");
        assert!(report.is_ready());
        assert_eq!(
            report.passed_text("h"),
            "h\nok: a\nok: b\nwarning: Destinations: stripe: customer.* goes nowhere\npreflight: 2 checks passed; sam deploy may go ahead\n"
        );
    }
}
