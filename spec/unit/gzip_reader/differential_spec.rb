# frozen_string_literal: true

require_relative "../../support/helpers/gzip_reader"

# ThriftNative::GzipReader against Zlib::GzipReader of the same Ruby: random sequences of every read method (with
# their arguments, separators, limits and buffers), pushes back, rewinds and counters, over inputs written by
# Zlib's writer and by ours, each over a recording io (which checks the calls Zlib makes of the io), an io that
# returns 7 bytes at a time, one with only `read`, a StringIO and a pipe.
RSpec.describe ThriftNative::GzipReader do
  include GzipReaderHelpers

  # Every step the programs draw from: [name, lambda of the reader].
  def step_kinds(rng)
    n = -> { [0, 1, 2, 3, 7, 100, 2047, 2049, 5000, 70_000].sample(random: rng) }
    seps = ["\n", "a", " ", "é", "\r\n", "ab", "", nil, "\n\n"]
    kinds = [
      -> { ["read", ->(gz) { gz.read }] },
      -> { k = n.call; ["read(#{k})", ->(gz) { gz.read(k) }] },
      -> { k = n.call; ["readpartial(#{k})", ->(gz) { gz.readpartial(k) }] },
      -> { k = n.call; ["readpartial(#{k}, buf)", ->(gz) { buf = +"old"; [gz.readpartial(k, buf), buf] }] },
      -> { ["gets", ->(gz) { $_ = +"before"; [gz.gets, $_] }] },
      -> { s = seps.sample(random: rng); ["gets(#{s.inspect})", ->(gz) { gz.gets(s) }] },
      -> { k = n.call; ["gets(#{k})", ->(gz) { gz.gets(k) }] },
      -> { s = seps.sample(random: rng); k = n.call; ["gets(#{s.inspect}, #{k})", ->(gz) { gz.gets(s, k) }] },
      -> { ["readline", ->(gz) { gz.readline }] },
      -> { ["getc", ->(gz) { gz.getc }] },
      -> { ["readchar", ->(gz) { gz.readchar }] },
      -> { ["getbyte", ->(gz) { gz.getbyte }] },
      -> { ["readbyte", ->(gz) { gz.readbyte }] },
      -> { ["each_char x3", ->(gz) { out = []; gz.each_char { |c| out << c; break if out.size == 3 }; out }] },
      -> { ["each_byte x3", ->(gz) { out = []; gz.each_byte { |b| out << b; break if out.size == 3 }; out }] },
      -> { ["each_line x2", ->(gz) { out = []; gz.each_line { |l| out << l; break if out.size == 2 }; out }] },
      -> { ["ungetc", ->(gz) { gz.ungetc("é!") }] },
      -> { ["ungetc(int)", ->(gz) { gz.ungetc(0x3042) }] },
      -> { ["ungetbyte", ->(gz) { gz.ungetbyte(0x141) }] },
      -> { ["eof?", ->(gz) { gz.eof? }] },
      -> { ["crc", ->(gz) { gz.crc }] },
      -> { ["unused", ->(gz) { gz.unused }] },
      -> { ["lineno=", ->(gz) { gz.lineno = 40 }] },
      -> { ["header", ->(gz) { [gz.orig_name, gz.comment, gz.mtime, gz.level, gz.os_code, gz.sync] }] },
      -> { ["rewind", ->(gz) { gz.rewind }] }
    ]
    kinds << -> { k = n.call; ["read(#{k}, buf)", ->(gz) { buf = +"old"; [gz.read(k, buf), buf] }] } if read_takes_outbuf?
    kinds
  end

  def program(seed, length)
    rng = Random.new(seed)
    kinds = step_kinds(rng)
    Array.new(length) { kinds.sample(random: rng).call }
  end

  def inputs
    text = text_lines(3000)
    bin = random_bytes(20_000)
    {
      "text by Zlib" => member(text, name: "t.txt", comment: "c"),
      "text by ours, level 1" => member(text, writer: ThriftNative::GzipWriter, level: 1),
      "binary by ours, level 9" => member(bin, writer: ThriftNative::GzipWriter, level: 9),
      "short text" => member("ab\ncd\n\n\nef é"),
      "empty" => member(""),
      "zeros (high ratio)" => member("\0" * 300_000),
      "with a trailer" => member("one\ntwo\n") + "TRAILING",
      "two members" => member("first\n") + member("second\n")
    }
  end

  it "gives the same transcript for random programs over every input and io kind" do
    inputs.each do |label, bytes|
      %i[replay small_chunks read_only stringio].each do |io_kind|
        # How much a few bytes of a long match inflate to differs (see "short chunks" below).
        next if io_kind == :small_chunks && label.start_with?("zeros")

        40.times do |seed|
          steps = program(seed, 40)
          steps = steps.reject { |name, _| name == "rewind" } if io_kind == :read_only
          # readpartial answers what is buffered, which from 7-byte chunks differs by zlib version (below).
          steps = steps.reject { |name, _| name.start_with?("readpartial") } if io_kind == :small_chunks
          expect_same_transcript(bytes, steps, io_kind: io_kind)
        rescue RSpec::Expectations::ExpectationNotMetError => e
          raise e.exception("#{label}, #{io_kind}, seed #{seed}: #{e.message}")
        end
      end
    end
  end

  # zlib.c stops a chunk's inflate where its own output buffer is full and the chunk used up, though inflate has
  # more of a long match to give; this reader gives it. Where an io returns a few bytes at a time, a readpartial may
  # so return more than Zlib's; the bytes are the same.
  it "gives the same bytes as Zlib from short chunks of a long match, in readpartial pieces of its own" do
    bytes = member("\0" * 300_000 + "tail")
    pieces = readers.map do |k|
      gz = k.new(make_io(:small_chunks, bytes))
      out = []
      loop { out << gz.readpartial(5000) }
    rescue EOFError
      out
    end
    expect(pieces[1].join).to eq(pieces[0].join)
    expect(pieces[1].join).to eq("\0" * 300_000 + "tail")
  end

  it "reads a pipe as Zlib does (no rewind)" do
    bytes = member(text_lines(2000), writer: ThriftNative::GzipWriter)
    3.times do |seed|
      steps = program(seed, 25).reject { |name, _| name == "rewind" }
      expect_same_transcript(bytes, steps, io_kind: :pipe)
    end
  end

  it "transcodes and tags as Zlib does for each encoding option" do
    text = "h\u00e9llo w\u00f6rld\nline two \u00e9\n\xFFbad\nend".b
    latin = "caf\xE9\nna\xEFve\n".b
    options = [{}, { external_encoding: "ISO-8859-1" }, { encoding: "ISO-8859-1:UTF-8" },
               { encoding: "UTF-8:UTF-16LE" }, { external_encoding: "BINARY" }, { internal_encoding: "UTF-8" },
               { encoding: "ISO-8859-1:UTF-8", invalid: :replace, undef: :replace }]
    steps = [["gets", ->(gz) { gz.gets }], ["getc", ->(gz) { gz.getc }], ["read(3)", ->(gz) { gz.read(3) }],
             ["ungetc", ->(gz) { gz.ungetc("\u00e9") }], ["gets(2)", ->(gz) { gz.gets(2) }],
             ["external_encoding", ->(gz) { gz.external_encoding }], ["readlines", ->(gz) { gz.readlines }],
             ["read", ->(gz) { gz.read }]]
    [text, latin].each do |data|
      options.each do |opts|
        expect_same_transcript(member(data), steps, **opts)
      end
    end
    # A dummy external encoding: zlib.c converts through one converter, as a stream (the BOM read once), and
    # getc converts from the buffered bytes.
    utf16 = "\uFEFFline one\nline two\nthree \u00e9\n".encode("UTF-16BE").b
    utf32 = "\uFEFFa\nb\u00e9c\n".encode("UTF-32LE").b
    dummy_steps = steps + [["rewind", ->(gz) { gz.rewind }], ["getc", ->(gz) { gz.getc }],
                           ["getc", ->(gz) { gz.getc }], ["each_char", ->(gz) { gz.each_char.to_a }]]
    [[utf16, "UTF-16:UTF-8"], [utf32, "UTF-32:UTF-8"], [utf16, "UTF-16"], [text, "UTF-16:UTF-8"]].each do |data, enc|
      expect_same_transcript(member(data), dummy_steps, encoding: enc)
    end
  end
end
