//! Resource templates (RFC 6570, level 1): whether a URI is of a template's form, and its
//! variables. Pure; the server reads a templated resource with them, and the peer refuses a
//! subscription to a URI that matches no resource and no template.

use std::collections::HashMap;

/// Matches `uri` against an RFC 6570 level-1 template; the variables on success.
pub fn match_template(template: &str, uri: &str) -> Option<HashMap<String, String>> {
    let mut vars = HashMap::new();
    let mut rest = uri;
    let mut t = template;
    while !t.is_empty() {
        match t.find('{') {
            Some(0) => {
                let close = t.find('}')?;
                let name = &t[1..close];
                t = &t[close + 1..];
                let next_lit = t.find('{').map_or(t, |i| &t[..i]);
                let end = if next_lit.is_empty() {
                    rest.len()
                } else {
                    rest.find(next_lit)?
                };
                if end == 0 {
                    return None;
                }
                vars.insert(name.to_owned(), rest[..end].to_owned());
                rest = &rest[end..];
            }
            Some(i) => {
                rest = rest.strip_prefix(&t[..i])?;
                t = &t[i..];
            }
            None => {
                rest = rest.strip_prefix(t)?;
                t = "";
            }
        }
    }
    rest.is_empty().then_some(vars)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_level_one() {
        let v = match_template("test://template/{id}/data", "test://template/123/data").unwrap();
        assert_eq!(v["id"], "123");
        assert!(match_template("test://template/{id}/data", "test://template//data").is_none());
        assert!(match_template("test://template/{id}/data", "test://other/1/data").is_none());
        let v = match_template("file:///{path}", "file:///a/b.txt").unwrap();
        assert_eq!(v["path"], "a/b.txt");
        assert!(match_template("x://{a}", "x://").is_none());
    }
}
