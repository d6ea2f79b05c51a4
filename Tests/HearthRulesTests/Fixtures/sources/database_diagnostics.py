#!/usr/bin/env python3
"""Generates ../database-diagnostics.json: Realtime Database rules files that must not compile,
with the first diagnostic's exact line, column and message (and sometimes the whole caret
rendering). Positions are 1-based; columns count Unicode scalars. Run: python3 database_diagnostics.py
"""
import json
import os

cases = []


def diag(name, lines, line, column, message, rendered=None):
    c = {"name": name, "rules": lines, "line": line, "column": column, "message": message}
    if rendered:
        c["rendered"] = rendered
    cases.append(c)


def wrap(rule_line):
    return ["{", '  "rules": {', rule_line, "  }", "}"]


diag("an unknown $capture inside an expression", wrap('    ".read": "auth.uid === $uid"'), 3, 28,
     "unknown variable '$uid': no $uid wildcard above this rule",
     ["database.rules.json:3:28: unknown variable '$uid': no $uid wildcard above this rule",
      '    ".read": "auth.uid === $uid"',
      "                           ^~~~"])
diag("JSON escapes before the error keep the column right", wrap('    ".write": "auth.uid == \\"x\\" && foo"'), 3, 37,
     "unknown variable 'foo'")
diag("a missing comma in the JSON", ["{", '  "rules": {', '    "a": {".read": true}', '    "b": {}', "  }", "}"], 4, 5,
     "expected ',' or '}', found '\"'")
diag("an unknown rule key", wrap('    ".reed": true'), 3, 5,
     'unknown rule ".reed" (expected .read, .write, .validate or .indexOn)')
diag("a number as a rule", wrap('    ".read": 7'), 3, 14, ".read must be a boolean or a string expression, found a number")
diag("newData in a .read rule", wrap('    ".read": "newData.exists()"'), 3, 15, "newData is not available in .read rules")
diag("query in a .write rule", wrap('    ".write": "query.limitToFirst < 10"'), 3, 16, "query is only available in .read rules")
diag("two wildcards at one level", ["{", '  "rules": {', '    "$a": {},', '    "$b": {}', "  }", "}"], 4, 5,
     'only one wildcard per level: "$b" and the one at database.rules.json:3:5')
diag("a wildcard name reused below", ["{", '  "rules": {', '    "$a": { "$a": {} }', "  }", "}"], 3, 13,
     'wildcard "$a" is already used above this level')
diag("a regex literal outside matches()", wrap('    ".read": "/abc/ == \'x\'"'), 3, 15,
     "a regex literal is only allowed as the argument of matches()")
diag("an invalid regex", wrap('    ".read": "\'a\'.matches(/(/)"'), 3, 27, "invalid regex: missing closing )")
diag("an unsupported regex flag", wrap('    ".read": "\'a\'.matches(/a/g)"'), 3, 27, "unsupported regex flags 'g' (only 'i' is allowed)")
diag("'^' inside a regex", wrap('    ".read": "\'a\'.matches(/a^b/)"'), 3, 27, "'^' anchors only as the first character of a regex")
diag("'$' inside a regex", wrap('    ".read": "\'a\'.matches(/a$b/)"'), 3, 27, "'$' anchors only as the last character of a regex")
diag("an expression cut short", wrap('    ".read": "auth != "'), 3, 23, "unexpected end of expression, expected an expression")
diag("assignment after comments", ["// header comment", "{", '  /* a "rules": block */ "rules": {',
                                   '    ".write": "auth.uid = \'x\'"', "  }", "}"], 4, 25,
     "assignment is not allowed in rules (did you mean '=='?)",
     ["database.rules.json:4:25: assignment is not allowed in rules (did you mean '=='?)",
      '    ".write": "auth.uid = \'x\'"',
      "                        ^"])
diag("a misspelt top-level key", ['{"rulez": {}}'], 1, 2, 'unknown top-level key "rulez" (only "rules" is allowed)')
diag("a string literal as a rule", wrap('    ".read": "\'yes\'"'), 3, 15, ".read must be a boolean expression")
diag("a semicolon", wrap('    ".read": "true;"'), 3, 19, "';' is not allowed in rules: a rule is a single expression")
diag("a multi-byte character before the error", wrap('    ".read": "\'\u00e9\' === x"'), 3, 23, "unknown variable 'x'")
diag("an unterminated comment", ["{", "  /* never closed", '  "rules": {}', "}"], 2, 3, "unterminated comment")
diag("a key with a slash", wrap('    "a/b": {}'), 3, 5, "invalid key \"a/b\": keys cannot contain '/'")
diag("a child that is not an object", wrap('    "users": true'), 3, 14, '"users" must be an object of rules, found a boolean')
diag("an .indexOn of numbers", wrap('    ".indexOn": [1]'), 3, 18, ".indexOn lists child keys as strings, found a number")
diag("a duplicate key", ["{", '  "rules": {', '    ".read": true,', '    ".read": false', "  }", "}"], 4, 5, 'duplicate key ".read"')
diag("'**' is rejected", wrap('    ".read": "2 ** 2 === 4"'), 3, 17, "'**' is not supported")
diag("a function call without a receiver", wrap('    ".read": "exists()"'), 3, 15, "unknown variable 'exists'")
diag("an unclosed parenthesis", wrap('    ".read": "(true"'), 3, 20, "expected ')', found end of expression")
diag("trailing text after the rules", ["{\"rules\": {}}", "x"], 2, 1, "unexpected 'x' after the rules object")
diag("an empty expression", wrap('    ".read": ""'), 3, 15, "empty rule expression")

diag("a string operand of '!'", wrap('    ".read": "!\'x\'"'), 3, 16, ".read must be a boolean expression")
diag("a literal non-boolean branch", wrap('    ".read": "auth.uid === \'x\' ? 7 : true"'), 3, 34, ".read must be a boolean expression")
diag("hasChildren([])", wrap('    ".read": "data.hasChildren([])"'), 3, 32, "hasChildren() takes a non-empty list of child names")
diag("hasChildren with two arguments", wrap('    ".read": "root.hasChildren(\'a\', \'b\')"'), 3, 15,
     "hasChildren() takes 0 or 1 argument, not 2")
diag("a number where a string goes", wrap('    ".read": "\'a\'.contains(5)"'), 3, 28, "contains() takes string arguments")
diag("an unknown method", wrap('    ".read": "\'a\'.nope()"'), 3, 15, "unknown method nope()")
diag("an unknown method called by name", wrap('    ".read": "root[\'doesNotExist\']()"'), 3, 15, "unknown method doesNotExist()")
diag("an unknown query property", wrap('    ".read": "query.foo == 1"'), 3, 15, "query has no property 'foo'")
diag("a snapshot compared as a value", wrap('    ".read": "root.child(\'a\') != null"'), 3, 15,
     "compare a snapshot's val(), not the snapshot")
diag("a property of val()", wrap('    ".read": "data.val().notFound == 1"'), 3, 15, "'notFound' is not a property of a method's result")
diag("matches() with a string", wrap('    ".read": "data.val().matches(\'/foo/\')"'), 3, 34, "matches() takes a regex literal (/…/)")
diag("a boolean in a comparison", wrap('    ".read": "data.val() > true"'), 3, 28, "'>' compares numbers or strings")

# Rulesets production refuses at deploy (pyric r29-deploy-rejections); Hearth's texts differ.
diag("'!' on auth.uid, a string", wrap('    ".read": "!auth.uid"'), 3, 16, ".read must be a boolean expression")
diag("production rejects: auth.uid as a rule", wrap('    ".read": "auth.uid"'), 3, 15, ".read must be a boolean expression")
diag("production rejects: length called as a method", wrap('    ".write": "newData.val().length() > 0"'), 3, 16,
     "unknown method length()")
diag("production rejects: a snapshot method on auth", wrap('    ".read": "auth.exists()"'), 3, 15,
     "exists() is a snapshot method (root, data, newData, child(), parent())")
diag("production rejects: a string method on a snapshot", wrap('    ".read": "data.contains(\'a\')"'), 3, 15,
     "contains() is a string method: call it on val()")
diag("production rejects: a string minus a number", wrap('    ".read": "\'a\' - 1 > 0"'), 3, 15, "'-' needs numbers")
diag("production rejects: a snapshot in a comparison", wrap('    ".read": "data > 1"'), 3, 15,
     "compare a snapshot's val(), not the snapshot")
diag("production rejects: child() with two arguments", wrap('    ".read": "data.child(\'a\', \'b\').exists()"'), 3, 15,
     "child() takes 1 argument, not 2")
diag("production rejects: hasChild(1)", wrap('    ".read": "data.hasChild(1)"'), 3, 29, "hasChild() takes string arguments")
diag("production rejects: an object as a rule", wrap('    ".write": {"x": 1}'), 3, 15,
     ".write must be a boolean or a string expression, found an object")

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "database-diagnostics.json")
with open(path, "w") as f:
    json.dump({"comment": "Generated by sources/database_diagnostics.py; edit that and rerun.", "cases": cases}, f,
              indent=1, ensure_ascii=False)
    f.write("\n")
print(f"{len(cases)} cases -> {os.path.normpath(path)}")
