// Every type the struct codec handles, for the struct/union specs and benchmarks.
// (Debian's thrift compiler 0.17 has no `uuid` in IDL: UUID fields are added by hand in test_support/codec_extra_types.rb.)
namespace rb CodecTest

enum Color {
  RED = 1,
  GREEN = 2,
  BLUE = 3
}

struct Leaf {
  1: i32 id,
  2: string label,
}

struct Scalars {
  1: bool a_bool,
  2: i8 a_byte,
  3: i16 an_i16,
  4: i32 an_i32,
  5: i64 an_i64,
  6: double a_double,
  7: string a_string,
  8: binary a_binary,
  9: Color a_color,
}

struct Defaults {
  1: i32 count = 7,
  2: string name = "default name",
  3: list<i32> numbers = [1, 2, 3],
  4: optional string note,
  5: required i32 must,
  6: Color color = Color.GREEN,
  7: set<string> tags = ["a", "b"],
  8: map<string, i32> weights = {"x": 1},
}

union Choice {
  1: i32 number,
  2: string text,
  3: Leaf leaf,
  4: list<string> words,
}

exception Oops {
  1: string message,
  2: i32 code,
}

struct Containers {
  1: list<bool> bools,
  2: list<i8> bytes,
  3: list<i16> i16s,
  4: list<i32> i32s,
  5: list<i64> i64s,
  6: list<double> doubles,
  7: list<string> strings,
  8: list<binary> binaries,
  9: list<Leaf> leaves,
  10: set<i32> int_set,
  11: set<string> string_set,
  12: map<string, i32> string_to_int,
  13: map<i64, Leaf> int_to_leaf,
  14: map<string, list<i32>> string_to_list,
  15: list<list<string>> nested_lists,
  16: list<map<i32, string>> list_of_maps,
  17: set<Leaf> leaf_set,
  18: list<Color> colors,
  19: map<double, bool> double_to_bool,
  20: list<Choice> choices,
}

struct Everything {
  1: Scalars scalars,
  2: Containers containers,
  3: Defaults defaults,
  4: Choice choice,
  5: Oops oops,
  6: optional Everything child,
  7: required i32 version,
}

// Upstream Thrift's Ruby benchmark shapes: a small struct, and a large one four levels deep.
struct Small {
  1: bool flag,
  2: i8 tiny,
  3: i16 short_one,
  4: i32 normal,
  5: i64 big,
  6: double ratio,
  7: string name,
  8: binary payload,
}

struct Level {
  1: list<Level> children,
  2: map<i32, Level> by_i32,
  3: map<i64, Level> by_i64,
  4: map<double, Level> by_double,
  5: map<string, Level> by_string,
  6: Small item,
}
