# SPDX-License-Identifier: BSL-1.0
"""Reads conan/conanfile.py without Conan (which cannot be installed where
the tests run) and checks what the package promises against the project:

- package_type "header-library" and a package_id() that clears the info;
- one with_<component> option per component the project's CMakeLists.txt
  declares with dml_component(), defaults mpi/verbs off and data on;
- requirements: eigen always, boost (for Boost.MPI) only under with_mpi,
  zlib only under with_data, xtensor only under with_xtensor, nothing else
  from a remote for mpi and verbs;
- package_info(): cmake_file_name "dml", cmake_target_name "dml::dml" and a
  component with target dml::<c> for every option;
- every DML_* cache variable generate() sets is an option of CMakeLists.txt.

This is a structural reading of the recipe's syntax tree, not a Conan run.
usage: check_conan.py <conanfile.py> <CMakeLists.txt>
"""
import ast
import re
import sys

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def calls(tree, attr):
    """Every call of <something>.attr(...) under tree."""
    return [n for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == attr]


def option_tests(test):
    """Names X of self.options.X read in an if-condition."""
    return {n.attr for n in ast.walk(test)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute) and n.value.attr == "options"}


def requirements_by_option(method):
    """{option or None: [package names]} of the self.requires(...) calls."""
    found = {}

    def visit(body, guard):
        for stmt in body:
            if isinstance(stmt, ast.If):
                names = option_tests(stmt.test)
                visit(stmt.body, next(iter(names)) if len(names) == 1 else "?")
                visit(stmt.orelse, "?")
            else:
                for call in calls(stmt, "requires"):
                    ref = literal(call.args[0]) if call.args else None
                    if isinstance(ref, str):
                        found.setdefault(guard, []).append(ref.split("/")[0])
    visit(method.body, None)
    return found


def main(recipe_path, cmakelists_path):
    tree = ast.parse(open(recipe_path, encoding="utf-8").read(), recipe_path)
    cmake = open(cmakelists_path, encoding="utf-8").read()
    components = re.findall(r"^\s*dml_component\((\w+)", cmake, re.M)
    cmake_options = set(re.findall(r"^\s*option\((DML_\w+)", cmake, re.M))
    check(bool(components), f"CMakeLists.txt declares components with dml_component() (found {components})")

    classes = [c for c in tree.body if isinstance(c, ast.ClassDef)
               and any(getattr(b, "id", None) == "ConanFile" for b in c.bases)]
    check(len(classes) == 1, "one ConanFile class")
    if not classes:
        return
    cls = classes[0]
    attrs = {t.id: s.value for s in cls.body if isinstance(s, ast.Assign)
             for t in s.targets if isinstance(t, ast.Name)}
    methods = {m.name: m for m in cls.body if isinstance(m, ast.FunctionDef)}

    check(literal(attrs.get("name")) == "dml", 'name = "dml"')
    check(literal(attrs.get("package_type")) == "header-library", 'package_type = "header-library"')
    check("package_id" in methods and any(isinstance(c.func.value, ast.Attribute) and c.func.value.attr == "info"
                                          for c in calls(methods["package_id"], "clear")),
          "package_id() calls self.info.clear()")

    options = literal(attrs.get("options")) or {}
    defaults = literal(attrs.get("default_options")) or {}
    wanted = {f"with_{c}" for c in components}
    check(set(options) == wanted, f"options are {sorted(wanted)} (found {sorted(options)})")
    check(all(options.get(o) == [True, False] for o in wanted), "every option is [True, False]")
    check(defaults == {"with_mpi": False, "with_verbs": False, "with_data": True, "with_xtensor": False},
          f"defaults: mpi, verbs, xtensor off, data on (found {defaults})")

    reqs = requirements_by_option(methods.get("requirements", ast.FunctionDef(body=[])))
    check(sorted(reqs.get(None, [])) == ["eigen"], f"always required: eigen (found {reqs.get(None)})")
    check(reqs.get("with_data") == ["zlib"], "zlib is required only under with_data")
    check(reqs.get("with_xtensor") == ["xtensor"], "xtensor is required only under with_xtensor")
    check(reqs.get("with_mpi") == ["boost"] and "with_verbs" not in reqs and "?" not in reqs,
          "mpi adds only boost (Boost.MPI), verbs nothing from a remote (MPI and rdma-core: system packages)")
    check("system_requirements" in methods, "system_requirements() names the system packages for mpi and verbs")

    info = methods.get("package_info")
    props = {}
    for call in calls(info, "set_property") if info else []:
        key, value = (literal(a) for a in call.args[:2])
        props.setdefault(key, []).append(value)
    check("dml" in props.get("cmake_file_name", []), 'cmake_file_name "dml"')
    for target in ["dml::dml"] + [f"dml::{c}" for c in components]:
        check(target in props.get("cmake_target_name", []), f'cmake_target_name "{target}"')
    used_components = {literal(s.slice) for s in ast.walk(info) if isinstance(s, ast.Subscript)
                       and isinstance(s.value, ast.Attribute) and s.value.attr == "components"} if info else set()
    check(set(components) <= used_components, f"package_info() fills components {sorted(components)}")

    generate = methods.get("generate")
    dml_vars = set()
    for node in ast.walk(generate) if generate else []:
        if isinstance(node, ast.Subscript) and isinstance(literal(node.slice), str) \
                and literal(node.slice).startswith("DML_"):
            dml_vars.add(literal(node.slice))
    check({"DML_BUILD_TESTS", "DML_BUILD_EXAMPLES", "DML_BUILD_BENCH"} <= dml_vars,
          "generate() turns tests, examples and benchmarks off")
    unknown = sorted(dml_vars - cmake_options)
    check(not unknown, f"every DML_* variable generate() sets is an option of CMakeLists.txt (unknown: {unknown})")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")
    print("conan recipe: all checks passed")
