import java.io.BufferedReader;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** Reads args[0] every way java.nio.file offers, then tries to open args[1] (missing). */
public class NioRead {
    public static void main(String[] args) throws Exception {
        Path p = Path.of(args[0]);
        byte[] all = Files.readAllBytes(p);
        System.out.println("readAllBytes " + all.length + " [" + new String(all, StandardCharsets.UTF_8).replace("\n", "|") + "]");
        System.out.println("readString [" + Files.readString(p).replace("\n", "|") + "]");
        try (InputStream in = Files.newInputStream(p)) {
            byte[] buf = new byte[5];
            int n = in.read(buf);
            System.out.println("newInputStream " + n + " [" + new String(buf, 0, n, StandardCharsets.UTF_8) + "] next " + in.read());
        }
        try (Stream<String> lines = Files.lines(p)) {
            System.out.println("lines " + lines.map(String::length).map(String::valueOf).collect(Collectors.joining(",")));
        }
        try (BufferedReader r = Files.newBufferedReader(p)) {
            System.out.println("newBufferedReader [" + r.readLine() + "]");
        }
        System.out.println("readAllLines " + Files.readAllLines(p).size());
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
            ByteBuffer bb = ByteBuffer.allocate(4);
            int n = ch.read(bb);
            System.out.println("channel size " + ch.size() + " read " + n + " [" + new String(bb.array(), 0, n, StandardCharsets.UTF_8) + "] position " + ch.position());
            bb.clear();
            n = ch.read(bb, 6);
            System.out.println("channel pread " + n + " [" + new String(bb.array(), 0, n, StandardCharsets.UTF_8) + "]");
            ByteBuffer direct = ByteBuffer.allocateDirect(3);
            n = ch.read(direct);
            direct.flip();
            byte[] d = new byte[direct.remaining()];
            direct.get(d);
            System.out.println("channel direct " + n + " [" + new String(d, StandardCharsets.UTF_8) + "]");
        }
        try {
            System.out.println("opened " + args[1] + ": " + Files.readAllBytes(Path.of(args[1])).length);
        } catch (java.io.IOException e) {
            System.out.println("missing: " + e.getClass().getName() + ": " + e.getMessage());
        }
    }
}
