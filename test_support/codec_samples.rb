# frozen_string_literal: true

# Deterministic random instances of the codec test types, and the benchmark shapes. Runs the same in every
# process (pure Ruby, the C accelerator, ours) for a given seed.
module CodecSamples
  module_function

  def text(r, max = 12) = Array.new(r.rand(0..max)) { ["a", "Z", "é", "字", "\u{1F600}", " "].sample(random: r) }.join
  def bin(r, max = 16) = r.bytes(r.rand(0..max))
  def i32(r) = [r.rand(-(2**31)..(2**31 - 1)), 0, -1, 2**31 - 1].sample(random: r)
  def i64(r) = [r.rand(-(2**63)..(2**63 - 1)), 0, 2**40].sample(random: r)
  def dbl(r) = [r.rand * 1000, -0.5, 0.0, 1e300, 12.75].sample(random: r)
  def maybe(r, &) = r.rand(4).zero? ? nil : yield

  def leaf(r) = CodecTest::Leaf.new(id: maybe(r) { i32(r) }, label: maybe(r) { text(r) })

  def scalars(r)
    CodecTest::Scalars.new(
      a_bool: maybe(r) { r.rand(2).zero? }, a_byte: maybe(r) { r.rand(-128..127) },
      an_i16: maybe(r) { r.rand(-32_768..32_767) }, an_i32: maybe(r) { i32(r) }, an_i64: maybe(r) { i64(r) },
      a_double: maybe(r) { dbl(r) }, a_string: maybe(r) { text(r) }, a_binary: maybe(r) { bin(r) },
      a_color: maybe(r) { [1, 2, 3].sample(random: r) }
    )
  end

  def list(r, max = 4, &) = Array.new(r.rand(0..max)) { yield }

  def choice(r)
    case r.rand(4)
    when 0 then CodecTest::Choice.new(:number, i32(r))
    when 1 then CodecTest::Choice.new(:text, text(r))
    when 2 then CodecTest::Choice.new(:leaf, leaf(r))
    else CodecTest::Choice.new(:words, list(r) { text(r) })
    end
  end

  def containers(r)
    CodecTest::Containers.new(
      bools: maybe(r) { list(r) { r.rand(2).zero? } }, bytes: maybe(r) { list(r) { r.rand(-128..127) } },
      i16s: maybe(r) { list(r) { r.rand(-32_768..32_767) } }, i32s: maybe(r) { list(r) { i32(r) } },
      i64s: maybe(r) { list(r) { i64(r) } }, doubles: maybe(r) { list(r) { dbl(r) } },
      strings: maybe(r) { list(r) { text(r) } }, binaries: maybe(r) { list(r) { bin(r) } },
      leaves: maybe(r) { list(r) { leaf(r) } }, int_set: maybe(r) { Set.new(list(r) { i32(r) }) },
      string_set: maybe(r) { Set.new(list(r) { text(r) }) },
      string_to_int: maybe(r) { list(r) { [text(r), i32(r)] }.to_h },
      int_to_leaf: maybe(r) { list(r) { [i64(r), leaf(r)] }.to_h },
      string_to_list: maybe(r) { list(r) { [text(r), list(r) { i32(r) }] }.to_h },
      nested_lists: maybe(r) { list(r) { list(r) { text(r) } } },
      list_of_maps: maybe(r) { list(r) { list(r) { [i32(r), text(r)] }.to_h } },
      leaf_set: maybe(r) { Set.new(list(r) { leaf(r) }) }, colors: maybe(r) { list(r) { [1, 2, 3].sample(random: r) } },
      double_to_bool: maybe(r) { list(r) { [dbl(r), r.rand(2).zero?] }.to_h },
      choices: maybe(r) { list(r) { choice(r) } }
    )
  end

  def defaults(r)
    d = CodecTest::Defaults.new(must: i32(r))
    d.note = text(r) if r.rand(2).zero?
    d.count = i32(r) if r.rand(3).zero?
    d
  end

  def everything(r, depth = 0)
    CodecTest::Everything.new(
      scalars: maybe(r) { scalars(r) }, containers: maybe(r) { containers(r) }, defaults: maybe(r) { defaults(r) },
      choice: maybe(r) { choice(r) }, oops: maybe(r) { CodecTest::Oops.new(message: text(r), code: i32(r)) },
      child: depth < 2 ? maybe(r) { everything(r, depth + 1) } : nil, version: i32(r)
    )
  end

  # The benchmark's small struct: one field of each scalar type plus two strings (binary 77 bytes).
  def small
    CodecTest::Small.new(flag: true, tiny: 7, short_one: 1234, normal: 123_456_789, big: 1_234_567_890_123,
                         ratio: 3.25, name: "benchmark!", payload: "\x00\x01\x02\x03\x04".b * 2)
  end

  # The benchmark's large struct: four levels, each holding a list and i32/i64/double/string-keyed maps of the
  # level below (about 1.6 MB in binary).
  def large(levels = 4, fanout = 5)
    return CodecTest::Level.new(item: small) if levels == 1

    below = ->(i) { large(levels - 1, fanout).tap { |l| l.item = small if i.zero? } }
    CodecTest::Level.new(
      children: Array.new(fanout) { |i| below.call(i) },
      by_i32: Array.new(fanout) { |i| [i, below.call(i)] }.to_h,
      by_i64: Array.new(fanout) { |i| [i * 1_000_000_007, below.call(i)] }.to_h,
      by_double: Array.new(fanout) { |i| [i + 0.5, below.call(i)] }.to_h,
      by_string: Array.new(fanout) { |i| ["key#{i}", below.call(i)] }.to_h,
      item: small
    )
  end
end
