# frozen_string_literal: true

require_relative "../../support/helpers/gzip_reader"

# Bad input, each case read by Zlib::GzipReader and ours with the same steps: every truncation and every damaged
# byte of small members (header, body, footer), each header flag zlib.c refuses, garbage after a member, errors
# raised by `close` (a footer never checked before) and by `unused`. Same exception classes, messages, `input`,
# positions and io calls.
RSpec.describe ThriftNative::GzipReader do
  include GzipReaderHelpers

  def programs
    {
      "read all" => [["read", ->(gz) { gz.read }], ["read again", ->(gz) { gz.read }],
                     ["unused", ->(gz) { gz.unused }]],
      "pieces" => [["read(3)", ->(gz) { gz.read(3) }], ["gets", ->(gz) { gz.gets }],
                   ["readpartial", ->(gz) { gz.readpartial(100) }], ["getc", ->(gz) { gz.getc }],
                   ["read(50)", ->(gz) { gz.read(50) }], ["eof?", ->(gz) { gz.eof? }],
                   ["read(10)", ->(gz) { gz.read(10) }], ["readpartial", ->(gz) { gz.readpartial(10) }],
                   ["unused", ->(gz) { gz.unused }]],
      "lines" => [["readlines", ->(gz) { gz.readlines }], ["gets", ->(gz) { gz.gets }],
                  ["read(1)", ->(gz) { gz.read(1) }]],
      "close unread" => [["read(5)", ->(gz) { gz.read(5) }]],
      "close at the end" => [["each_byte", ->(gz) { n = 0; gz.each_byte { n += 1 }; n }]]
    }
  end

  let(:named) { member("hello\nworld\n" * 4, name: "n.txt", comment: "c") }
  let(:plain) { member("tiny\nfile\n") }

  it "answers each truncation of a member as Zlib does" do
    [named, plain].each do |bytes|
      (0..bytes.bytesize).each do |cut|
        programs.each_value { |steps| expect_same_transcript(bytes.byteslice(0, cut), steps) }
      end
    end
  end

  it "answers each damaged byte of a member as Zlib does" do
    [named, plain].each do |bytes|
      bytes.bytesize.times do |at|
        [0xff, 0x00, 0x01].each do |mask|
          damaged = bytes.dup
          damaged.setbyte(at, mask == 0x01 ? damaged.getbyte(at) ^ 1 : mask)
          programs.each_value { |steps| expect_same_transcript(damaged, steps) }
        end
      end
    end
  end

  it "refuses the header flags zlib.c refuses, in its order and words" do
    [0x02, 0x20, 0x22, 0x21, 0x40, 0x80, 0xc0, 0x01, 0x04].each do |flags|
      bytes = plain.dup
      bytes.setbyte(3, flags)
      expect_same_transcript(bytes, programs["pieces"])
    end
    method7 = plain.dup.tap { |b| b.setbyte(2, 7) }
    expect_same_transcript(method7, programs["pieces"])
    expect { described_class.new(StringIO.new(method7)) }
      .to raise_error(Zlib::GzipFile::Error, "unsupported compression method 7")
  end

  it "reads FEXTRA, FNAME and FCOMMENT headers that span chunks" do
    extra = [0x1f, 0x8b, 8, 0x04 | 0x08 | 0x10, 0, 0, 0, 0, 0, 3].pack("C*") + [3000].pack("v") + ("x" * 3000) +
            ("n" * 2500) + "\0" + ("c" * 10) + "\0"
    body = plain.byteslice(10..)
    expect_same_transcript(extra + body, programs["pieces"] + [["header", ->(gz) { [gz.orig_name, gz.comment] }]])
    expect_same_transcript((extra + body).byteslice(0, 4000), programs["pieces"])
  end

  it "keeps garbage after a member as unused, and zcat refuses it as Zlib does" do
    [plain + "garbage", plain + ("\0" * 20), plain + plain.byteslice(0, 5), plain * 3].each do |bytes|
      expect_same_transcript(bytes, programs["read all"])
      zcats = readers.map { |k| step { k.zcat(StringIO.new(bytes)) } }
      expect(zcats[1]).to eq(zcats[0])
    end
  end

  it "raises a footer error from close, keeping the io open, as Zlib does" do
    bad = plain.dup
    bad.setbyte(bad.bytesize - 8, bad.getbyte(bad.bytesize - 8) ^ 1)
    outcomes = readers.map do |k|
      io = make_io(:replay, bad)
      gz = k.new(io)
      gz.read
      [step { gz.close }, step { gz.closed? }, step { gz.close }, step { gz.read }, step { gz.unused }, io.calls]
    end
    expect(outcomes[1]).to eq(outcomes[0])
    expect(outcomes[1][0].first).to eq(Zlib::GzipFile::CRCError)
  end

  it "raises the same exceptions (with input) for what is not gzip at all" do
    ["", "x", "foobarzothoge", "\x1f\x8b", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00"].each do |bytes|
      expect_same_transcript(bytes.b, programs["pieces"])
    end
    error = (described_class.new(StringIO.new("foobarzothoge")) rescue $!) # rubocop:disable Style/RescueModifier
    expect(error.inspect).to eq('#<Zlib::GzipFile::Error: not in gzip format, input="foobarzothoge">')
  end
end
