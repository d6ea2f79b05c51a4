#!/usr/bin/env python3
"""Source of ../diagnostics-compile.json: rules files and the diagnostics they must produce
(severity, line, column, message substring). `emulator` says whether Google's emulator
rejects (any error) or accepts (warnings only) the file; checked by diagnostics_check.py."""
import json, os
HERE = os.path.dirname(os.path.abspath(__file__))

def fs(body, version="2"):
    head = f"rules_version = '{version}';\n" if version else ""
    return head + "service cloud.firestore {\n  match /databases/{database}/documents {\n" + body + "\n  }\n}\n"

def D(name, rules, expect, rendered=None, emulator=None):
    d = {"name": name, "rules": rules.split("\n")}
    d["expect"] = [dict(zip(["severity", "line", "column", "message"], e)) for e in expect]
    if rendered: d["rendered"] = rendered.split("\n")
    d["emulator"] = emulator or ("rejects" if any(e[0] == "error" for e in expect) else "accepts")
    return d

cases = [
    D("condition without 'if'", fs("    match /a/{b} {\n      allow read: true;\n    }"),
      [("error", 5, 19, "Missing 'if' before conditional expression.")],
      rendered="test.rules:5:19: Missing 'if' before conditional expression.\n      allow read: true;\n                  ^~~~"),
    D("unterminated string", fs("    match /a/{b} {\n      allow read: if b == 'x;\n    }"),
      [("error", 5, 27, "Unterminated string literal.")]),
    D("unknown escape in a string", fs("    match /a/{b} {\n      allow read: if b.matches('\\d+');\n    }"),
      [("error", 5, 33, "Illegal escape sequence '\\d'")]),
    D("no service block", "rules_version = '2';\n", [("error", 1, 1, "Missing 'service' block")]),
    D("unknown service", "service cloud.datastore {\n}\n", [("error", 1, 9, "Unknown service 'cloud.datastore'")]),
    D("unknown type after 'is'", fs("    match /a/{b} {\n      allow read: if b is text;\n    }"),
      [("error", 5, 27, "Unknown type 'text' after 'is'")]),
    D("allow directly in the service", "rules_version = '2';\nservice cloud.firestore {\n  allow read;\n}\n",
      [("error", 3, 3, "'allow' statements must be inside a 'match' block.")]),
    D("misspelt method", fs("    match /a/{b} {\n      allow reed: if true;\n    }"),
      [("warning", 5, 13, "Unknown method 'reed'")]),
    D("let under rules_version 1", fs("    function f() { let x = 1; return x == 1; }\n    match /a/{b} { allow read: if f(); }", version=None),
      [("error", 3, 20, "Let bindings are not allowed in rules_version=\"1\"")]),
    D("recursion", fs("    function f(n) { return n == 0 || f(n - 1); }\n    match /a/{b} { allow read: if f(1); }"),
      [("error", 4, 38, "Recursive call is not allowed")]),
    D("mutual recursion", fs("    function f(n) { return g(n); }\n    function g(n) { return f(n); }\n    match /a/{b} { allow read: if f(1); }"),
      [("error", 5, 28, "Recursive call is not allowed")]),
    D("duplicate function", fs("    function f() { return true; }\n    function f() { return false; }\n    match /a/{b} { allow read: if f(); }"),
      [("error", 5, 14, "Function 'f' is already declared in this scope (at 4:14).")], emulator="skip"),
    D("v1: recursive wildcard not last", fs("    match /{rest=**}/b/{c} { allow read; }", version=None),
      [("error", 3, 5, "Glob matches are permitted as the last segment")]),
    D("v2: two recursive wildcards", fs("    match /{a=**}/b/{c=**} { allow read; }"),
      [("error", 4, 5, "only one recursive wildcard")]),
    D("dangling operator", fs("    match /a/{b} {\n      allow read: if b +;\n    }"),
      [("error", 5, 25, "Expected an expression but found ';'.")]),
    D("missing closing brace", "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n    match /a/{b} { allow read; }\n",
      [("error", 5, 1, "Expected '}' to close the block but found end of file.")]),
    D("unsupported rules_version", "rules_version = '3';\nservice cloud.firestore {\n}\n",
      [("error", 1, 1, "Unsupported rules_version '3'")]),
    D("integer literal out of range", fs("    match /a/{b} {\n      allow read: if 99999999999999999999 > 0;\n    }"),
      [("error", 5, 22, "Integer literal 99999999999999999999 is out of range.")]),
    D("invalid constant regex", fs("    match /a/{b} {\n      allow read: if b.matches('a(b');\n    }"),
      [("error", 5, 32, "Invalid regular expression: missing closing )")]),
    D("eight parameters", fs("    function f(a, b, c, d, e, f1, g, h) { return true; }\n    match /a/{b} { allow read: if f(1, 2, 3, 4, 5, 6, 7, 8); }"),
      [("error", 4, 14, "at most 7 are allowed")]),
    D("call chain too deep", fs("\n".join(f"    function f{i}() {{ return f{i+1}(); }}" for i in range(1, 22))
                                 + "\n    function f22() { return true; }\n    match /a/{b} { allow read: if f1(); }"),
      [("error", 24, 14, "Maximum allowed call depth of 20 is reached for [f1->")]),
    D("warnings: unknown variable, unknown function, arity", fs(
        "    function f(x) { return x == 1; }\n    match /a/{b} {\n      allow read: if nope == 1 || missing(1) || f(1, 2);\n    }"),
      [("warning", 6, 22, "Unknown variable 'nope'"), ("warning", 6, 35, "Unknown function 'missing'"),
       ("warning", 6, 49, "Function 'f' takes 1 argument but 2 are given")]),
    D("a function cannot see wildcards of the match that calls it", fs(
        "    function f() { return b == 'x'; }\n    match /a/{b} { allow read: if f(); }"),
      [("warning", 4, 27, "Unknown variable 'b'")]),
    D("documented functions the emulator lacks", fs("    match /a/{b} {\n      allow read: if bool('true') && math.isInfinite(1.0);\n    }"),
      [("warning", 5, 22, "bool() is documented"), ("warning", 5, 38, "math.isInfinite() is documented")], emulator="skip"),
    D("several errors are all reported", fs("    match /a/{b} {\n      allow read: true;\n      allow write: if 'x\n    }"),
      [("error", 5, 19, "Missing 'if'"), ("error", 6, 23, "Unterminated string literal.")]),
    D("expression nested too deeply", fs("    match /a/{b} {\n      allow read: if " + "(" * 200 + "true" + ")" * 200 + ";\n    }"),
      [("error", 5, 150, "Expression is nested too deeply (more than 128 levels).")], emulator="skip"),
    D("a block comment that never ends", fs("    match /a/{b} {\n      allow read; /* open\n    }"),
      [("error", 5, 19, "Unterminated block comment.")]),
    D("a namespace used as a variable name", fs("    function f(math) { return math == 1; }\n    match /a/{b} { allow read: if f(1); }"),
      [("error", 4, 5, "math is a package and cannot be used as variable name.")]),
    D("comments are fine", fs("    // a comment\n    match /a/{b} { /* block */ allow read; } // trailing"), []),
    D("the last allow may omit its semicolon", fs("    match /a/{b} {\n      allow read: if true\n    }"), []),
]
with open(os.path.join(HERE, "..", "diagnostics-compile.json"), "w", encoding="utf-8") as f:
    json.dump({"title": "Compile diagnostics: file:line:col, message, caret", "cases": cases}, f, indent=1, ensure_ascii=False)
    f.write("\n")
