//! A decoded message as leaves `path = value`, read from its `Debug` rendering: every
//! generated `kafka-protocol` struct derives `Debug`, so walking that text reaches every
//! field of every version without a hand-written visitor that could skip one. Null and
//! empty stay apart (`None` vs `Some("")`), lists carry their length, order is kept.

/// One value of the rendering.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// A number, bool, string literal (quotes kept), uuid, `None`, unit name.
    Leaf(String),
    /// `[a, b]`.
    List(Vec<Node>),
    /// `Name { field: value }` or a map `{key: value}` (keys rendered as text).
    Record(Vec<(String, Node)>),
    /// `Some(x)`.
    Some(Box<Node>),
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Punct(char),
    Text(String),
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if "{}[](),:".contains(c) {
            tokens.push(Token::Punct(c));
            i += 1;
        } else if c == '"' || (c == 'b' && chars.get(i + 1) == Some(&'"')) {
            let start = i;
            i += if c == 'b' { 2 } else { 1 };
            loop {
                match chars.get(i) {
                    None => return Err(format!("unterminated string at {start}")),
                    Some('\\') => i += 2,
                    Some('"') => break,
                    Some(_) => i += 1,
                }
            }
            i += 1;
            tokens.push(Token::Text(chars[start..i].iter().collect()));
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && !"{}[](),:\"".contains(chars[i]) {
                i += 1;
            }
            tokens.push(Token::Text(chars[start..i].iter().collect()));
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Result<Token, String> {
        let token = self.tokens.get(self.at).cloned().ok_or("unexpected end")?;
        self.at += 1;
        Ok(token)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Token::Punct(c)) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!(
                "expected {c:?} at token {}, got {:?}",
                self.at,
                self.peek()
            ))
        }
    }

    fn value(&mut self) -> Result<Node, String> {
        match self.next()? {
            Token::Punct('[') => {
                let mut items = Vec::new();
                while !self.eat(']') {
                    items.push(self.value()?);
                    if !self.eat(',') {
                        self.expect(']')?;
                        break;
                    }
                }
                Ok(Node::List(items))
            }
            Token::Punct('{') => self.fields(),
            Token::Text(word) => {
                if self.eat('{') {
                    self.fields()
                } else if self.eat('(') {
                    let inner = self.value()?;
                    self.eat(',');
                    self.expect(')')?;
                    if word == "Some" {
                        Ok(Node::Some(Box::new(inner)))
                    } else {
                        Ok(Node::Record(vec![(word, inner)]))
                    }
                } else {
                    Ok(Node::Leaf(word))
                }
            }
            Token::Punct(c) => Err(format!("unexpected {c:?} at token {}", self.at - 1)),
        }
    }

    /// After `{`: `key: value, ...}` (struct fields or map entries).
    fn fields(&mut self) -> Result<Node, String> {
        let mut fields = Vec::new();
        while !self.eat('}') {
            let key = match self.value()? {
                Node::Leaf(k) => k,
                other => format!("{other:?}"),
            };
            self.expect(':')?;
            fields.push((key, self.value()?));
            if !self.eat(',') {
                self.expect('}')?;
                break;
            }
        }
        Ok(Node::Record(fields))
    }
}

/// Parse a compact `{:?}` rendering.
pub fn parse(debug: &str) -> Result<Node, String> {
    let mut parser = Parser {
        tokens: tokenize(debug)?,
        at: 0,
    };
    let node = parser.value()?;
    if parser.at != parser.tokens.len() {
        return Err(format!("trailing tokens after {}", parser.at));
    }
    Ok(node)
}

/// `path = value` leaves in rendering order. A list adds `path = [n]`, a record nested in
/// `Some` adds `path = Some`, so an empty list and a null differ from each other.
pub fn flatten(node: &Node) -> Vec<(String, String)> {
    let mut out = Vec::new();
    walk(node, String::new(), &mut out);
    out
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

fn walk(node: &Node, path: String, out: &mut Vec<(String, String)>) {
    match node {
        Node::Leaf(v) => out.push((path, v.clone())),
        Node::Some(inner) => match inner.as_ref() {
            Node::Leaf(v) => out.push((path, format!("Some({v})"))),
            Node::List(items) => list(items, path, "Some(", ")", out),
            other => {
                out.push((path.clone(), "Some".into()));
                walk(other, path, out);
            }
        },
        Node::List(items) => list(items, path, "", "", out),
        Node::Record(fields) => {
            if fields.is_empty() {
                out.push((path.clone(), "{}".into()));
            }
            for (name, value) in fields {
                walk(value, join(&path, name), out);
            }
        }
    }
}

fn list(items: &[Node], path: String, pre: &str, post: &str, out: &mut Vec<(String, String)>) {
    out.push((path.clone(), format!("{pre}[{}]{post}", items.len())));
    for (i, item) in items.iter().enumerate() {
        walk(item, format!("{path}[{i}]"), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    #[allow(dead_code)]
    struct Part {
        error_message: Option<String>,
        ids: Vec<i32>,
        raw: Option<Vec<u8>>,
    }

    #[test]
    fn null_empty_and_lengths_are_distinct_leaves() {
        let parts = vec![
            Part {
                error_message: None,
                ids: vec![],
                raw: None,
            },
            Part {
                error_message: Some(String::new()),
                ids: vec![1, -1],
                raw: Some(vec![]),
            },
        ];
        let leaves = flatten(&parse(&format!("{parts:?}")).unwrap());
        let get = |p: &str| leaves.iter().find(|(k, _)| k == p).unwrap().1.clone();
        assert_eq!(get(""), "[2]");
        assert_eq!(get("[0].error_message"), "None");
        assert_eq!(get("[1].error_message"), "Some(\"\")");
        assert_eq!(get("[0].ids"), "[0]");
        assert_eq!(get("[1].ids[1]"), "-1");
        assert_eq!(get("[1].raw"), "Some([0])");
        assert_eq!(get("[0].raw"), "None");
    }

    #[test]
    fn strings_with_punctuation_and_maps_parse() {
        let text = r#"Resp { msg: Some("a, b: {c}\" d"), tags: {}, m: {1: b"\x00,"} }"#;
        let leaves = flatten(&parse(text).unwrap());
        assert_eq!(
            leaves,
            vec![
                ("msg".into(), r#"Some("a, b: {c}\" d")"#.into()),
                ("tags".into(), "{}".into()),
                ("m.1".into(), r#"b"\x00,""#.into()),
            ]
        );
    }
}
