# frozen_string_literal: true

require "tmpdir"

# What a child below prints: whether ours is active, what was replaced, whether thrift is loaded, and whose
# thrift_native.so files were loaded (LIB is the child's own constant: this project's lib/).
module LoadingReport
  REPORT = 'p [ThriftNative.active?, ThriftNative.replaced_methods, defined?(Thrift::Struct) ? 1 : 0, ' \
           '$LOADED_FEATURES.grep(/thrift_native\.so\z/).map { |f| f.start_with?(LIB) ? :ours : :other }]'
end

# Each example loads Ruby afresh in a child process: only one thrift_native can be loaded per process.
RSpec.describe "Loading thrift_native" do
  let(:lib) { SpecSupport::LIB }

  def ruby(*args, code, env: {})
    ChildRuby.capture(*args, "-e", "LIB = #{SpecSupport::LIB.inspect}\n#{code}", env: env)
  end

  it "loads thrift and the accelerator with require \"thrift_native\" alone" do
    out, err, ok = ruby("-I", lib, "require 'thrift_native'\n#{LoadingReport::REPORT}\np ThriftNative::VERSION")
    expect([ok, err]).to eq([true, ""])
    expect(out).to eq("[true, [], 1, [:ours]]\n#{ThriftNative::VERSION.inspect}\n")
  end

  it "ends with ours active whichever of thrift and thrift_native is required first" do
    first = ruby("-I", lib, "require 'thrift'\nrequire 'thrift_native'\n#{LoadingReport::REPORT}")
    second = ruby("-I", lib, "require 'thrift_native'\nrequire 'thrift'\n#{LoadingReport::REPORT}")
    expect(first).to eq(["[true, [], 1, [:ours]]\n", "", true])
    expect(second).to eq(first)
  end

  it "replaces the C accelerator's methods when the C one was loaded first" do
    code = <<~RUBY
      require "thrift"
      raise "the C accelerator should be loaded here" if defined?(ThriftNative)
      $LOAD_PATH.unshift LIB
      require "thrift_native"
      #{LoadingReport::REPORT}
      t = Thrift::MemoryBufferTransport.new
      pr = Thrift::BinaryProtocolAccelerated.new(t)
      pr.write_uuid("00112233-4455-6677-8899-aabbccddeeff")
      p pr.read_uuid
    RUBY
    expect(ruby(code)).to eq(["[true, [], 1, [:other, :ours]]\n\"00112233-4455-6677-8899-aabbccddeeff\"\n", "", true])
  end

  it "reports methods that something loaded later replaced" do
    code = "require 'thrift_native'\nclass Thrift::BinaryProtocolAccelerated; def read_i32 = 0; end\n" \
           "p ThriftNative.active?, ThriftNative.replaced_methods"
    expect(ruby("-I", lib, code)).to eq(["false\n[\"Thrift::BinaryProtocolAccelerated#read_i32\"]\n", "", true])
  end

  it "keeps Thrift::BinaryProtocol's Ruby methods with THRIFT_NATIVE_BINARY_PROTOCOL=ruby, and says so" do
    code = <<~RUBY
      require 'thrift_native'
      m = Thrift::MemoryBufferTransport.new
      prot = Thrift::BinaryProtocol.new(m)
      prot.write_i32(7)
      p [ThriftNative.active?, Thrift::BinaryProtocol.instance_method(:read_i32).source_location.nil?, prot.read_i32]
      puts ThriftNative.explain(prot).notes
    RUBY
    out, err, ok = ruby("-I", lib, code, env: { "THRIFT_NATIVE_BINARY_PROTOCOL" => "ruby" })
    expect([out, err, ok]).to eq(["[true, false, 7]\nThrift::BinaryProtocol keeps its Ruby methods: " \
                                  "THRIFT_NATIVE_BINARY_PROTOCOL=ruby was set when thrift_native loaded\n", "", true])
    native, = ruby("-I", lib, code)
    expect(native).to eq("[true, true, 7]\n")
  end

  it "keeps its internals private: the hooks the loader calls, the table of native methods" do
    code = "require 'thrift_native'\n" \
           "p %i[method_changed watched_classes].map { |m| [ThriftNative.respond_to?(m), ThriftNative.respond_to?(m, true)] }\n" \
           "p %i[NATIVE_METHODS LOADED_METHODS].map { |c| begin; eval(\"ThriftNative::\#{c}\"); rescue NameError; :private; end }\n" \
           "p ThriftNative.singleton_methods.sort"
    expect(ruby("-I", lib, code)).to eq(["[[false, true], [false, true]]\n[:private, :private]\n[:active?, :explain, :replaced_methods]\n", "", true])
  end

  it "probes the loaded thrift: 0.14 has no Types::UUID, DEFAULT_RECURSION_DEPTH or NEGATIVE_SIZE" do
    out, = ruby("-I", lib, "require 'thrift_native'\np ThriftNative::THRIFT_FEATURES")
    expect(eval(out)).to eq( # rubocop:disable Security/Eval
      uuid_type: 16, uuid_type_defined: Thrift::Types.const_defined?(:UUID),
      default_recursion_depth: 64, transport_negative_size: 5,
      # The contract, from what the library has: BYTE_MAX came with 0.24's checked writes, Types::UUID with 0.23,
      # NEGATIVE_SIZE with 0.24's MemoryBufferTransport#read_all, the others with thrift master's batch of fixes
      # (whose pure-Ruby traces, read before any method is replaced, go with CompactProtocol::I16_MAX).
      checked_binary_writes: Thrift::BinaryProtocol.const_defined?(:BYTE_MAX, false),
      typed_errors: Thrift::Types.const_defined?(:UUID, false),
      checked_compact_writes: Thrift::CompactProtocol.const_defined?(:I16_MAX, false),
      compact_unknown_type_errors: Thrift::CompactProtocol.const_defined?(:I16_MAX, false),
      compact_header_codes: Thrift::CompactProtocol.const_defined?(:I16_MAX, false),
      container_size_limit: Thrift::BaseProtocol.const_defined?(:MAX_CONTAINER_SIZE, false),
      memory_buffer_fixes: Thrift::CompactProtocol.const_defined?(:I16_MAX, false),
      memory_buffer_read_all: Thrift::TransportException.const_defined?(:NEGATIVE_SIZE, false),
      negative_sizes_refused: Thrift::TransportException.const_defined?(:NEGATIVE_SIZE, false),
      varint32_limit: Thrift::CompactProtocol.const_defined?(:MAX_VARINT32_BYTES, false),
      varint32_overflow_refused: Thrift::CompactProtocol.const_defined?(:MAX_VARINT32_LAST_BYTE, false),
      reused_structs_reset: Thrift::CompactProtocol.const_defined?(:I16_MAX, false),
      set_subclass_writes: Thrift::CompactProtocol.const_defined?(:I16_MAX, false),
      json_unknown_type_errors: begin
        Thrift::JsonProtocol.allocate.get_type_name_for_type_id(0)
      rescue NotImplementedError, StandardError => e
        e.is_a?(Thrift::ProtocolException)
      end,
      json_utf8_strings: Thrift::JsonProtocol.private_method_defined?(:decode_json_string),
      # In no release and not in the shared snapshot of master (zero_frame_spec.rb gives a library the change).
      zero_frames_refused: false
    )
  end

  # The contract follows what the loaded library has: given the constants that came with thrift 0.24's checked
  # writes and 0.23's typed errors, any thrift gets those behaviours (so both sides are exercised on every thrift).
  it "follows the loaded thrift's contract, probed from the constants that came with each change" do
    code = <<~RUBY
      require "thrift"
      mode = ARGV[0]
      if mode == "newer"
        Thrift::BinaryProtocol.const_set(:BYTE_MAX, 127) unless Thrift::BinaryProtocol.const_defined?(:BYTE_MAX, false)
        Thrift::Types.const_set(:UUID, 16) unless Thrift::Types.const_defined?(:UUID, false)
      end
      $LOAD_PATH.unshift LIB
      require "thrift_native"
      f = ThriftNative::THRIFT_FEATURES
      t = Thrift::MemoryBufferTransport.new("\\x00\\x00\\x00\\x01a\\x01\\x00\\x00\\x00\\x01")
      pr = Thrift::BinaryProtocolAccelerated.new(t)
      version_error = (pr.read_message_begin rescue $!)
      w = Thrift::MemoryBufferTransport.new
      wrote = (Thrift::BinaryProtocolAccelerated.new(w).write_byte(128); w.read(w.available).unpack1("H*")) rescue $!
      p [f[:checked_binary_writes], f[:typed_errors], version_error.type, wrote.inspect]
    RUBY
    cases = { "newer" => "[true, true, #{Thrift::ProtocolException::BAD_VERSION}, \"#<RangeError: integer out of bounds>\"]\n" }
    unless Thrift::BinaryProtocol.const_defined?(:BYTE_MAX, false) || Thrift::Types.const_defined?(:UUID, false)
      cases["as loaded"] = "[false, false, 0, \"\\\"80\\\"\"]\n"
    end
    cases.each do |mode, expected|
      out, err, ok = ChildRuby.capture("-e", "LIB = #{SpecSupport::LIB.inspect}\n#{code}", mode.split.first)
      expect([out, err, ok]).to eq([expected, "", true]), mode
    end
  end

  it "raises a clear LoadError, and nothing else, when thrift is missing" do
    # Without RUBYLIB, which bin/matrix points at the thrift under test.
    out, err, ok = ruby("--disable-gems", "-I", lib, <<~RUBY, env: { "RUBYLIB" => nil })
      begin
        require "thrift_native"
      rescue LoadError => e
        puts e.message
      end
    RUBY
    expect([ok, err]).to eq([true, ""])
    expect(out).to start_with("thrift_native needs the thrift library")
  end

  it "raises a LoadError, not a NameError, when the loaded thrift is unusable" do
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "thrift.rb"), "module Thrift; class MemoryBufferTransport; end; class Union; end; end\n")
      out, err, ok = ruby("--disable-gems", "-I", lib, "-I", dir, <<~RUBY)
        begin
          require "thrift_native"
        rescue LoadError => e
          puts e.class, e.message
        end
      RUBY
      expect([ok, err]).to eq([true, ""])
      expect(out).to match(/\ALoadError\nthrift_native could not load: the thrift library is missing or unusable \(.*Types.*\)\n\z/)
    end
  end

  # A newer thrift (with Types::UUID, DEFAULT_RECURSION_DEPTH, TransportException::NEGATIVE_SIZE) from an
  # apache/thrift checkout: THRIFT_MASTER_RB=<checkout>/lib/rb. Not on CI machines, which have Debian's 0.14 only.
  describe "with a newer thrift", if: ENV["THRIFT_MASTER_RB"] do
    let(:master_lib) { File.join(ENV.fetch("THRIFT_MASTER_RB"), "lib") }

    it "probes the newer constants and works in either load order" do
      code = <<~RUBY
        p ThriftNative.active?, ThriftNative::THRIFT_FEATURES
        t = Thrift::MemoryBufferTransport.new
        pr = Thrift::BinaryProtocolAccelerated.new(t)
        pr.write_uuid("00112233-4455-6677-8899-aabbccddeeff")
        p pr.read_uuid, (t.read_all(-1) rescue e = $!; [e.class, e.type])
      RUBY
      # thrift master: every contract feature on (the names: ext/thrift_native/src/thrift/contract.rs's table), but
      # THRIFT-6155's refusal of zero-length frames where that master predates it (the shared snapshot does): what
      # its own FramedTransport does with one.
      refuses = ChildRuby.eval(<<~'PROBE', accelerator: "pure-master", env: { "THRIFT_MASTER_RB" => ENV.fetch("THRIFT_MASTER_RB") })
        t = Thrift::FramedTransport.new(Thrift::MemoryBufferTransport.new("\0\0\0\0".b))
        print(begin; t.read_byte; false; rescue Thrift::TransportException; true; end)
      PROBE
      features = ThriftNative::CONTRACT_FEATURES.to_h { |f| [f, f != :zero_frames_refused || refuses == "true"] }
      probed = { uuid_type: 16, uuid_type_defined: true, default_recursion_depth: 64, transport_negative_size: 5 }
      expected = "true\n#{probed.merge(features).inspect}\n\"00112233-4455-6677-8899-aabbccddeeff\"\n" \
                 "[Thrift::TransportException, 5]\n"
      first = ruby("--disable-gems", "-I", lib, "-I", master_lib, "require 'thrift'\nrequire 'thrift_native'\n#{code}")
      second = ruby("--disable-gems", "-I", lib, "-I", master_lib, "require 'thrift_native'\nrequire 'thrift'\n#{code}")
      expect(first).to eq([expected, "", true])
      expect(second).to eq(first)
    end
  end
end
