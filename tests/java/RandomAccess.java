import java.io.FileNotFoundException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Reads args[0] every way RandomAccessFile offers, then tries to open args[1] (missing); with
 * args[2], opens that file "rw", prints what it holds and appends a line to it.
 */
public class RandomAccess {
    public static void main(String[] args) throws Exception {
        try (RandomAccessFile f = new RandomAccessFile(args[0], "r")) {
            System.out.println("length " + f.length());
            System.out.println("first byte " + f.read());
            System.out.println("pointer " + f.getFilePointer());
            System.out.println("line [" + f.readLine() + "]");
            byte[] buf = new byte[6];
            f.readFully(buf);
            System.out.println("readFully [" + new String(buf, StandardCharsets.UTF_8) + "]");
            f.seek(f.length() - 4);
            int n = f.read(buf, 0, buf.length);
            System.out.println("tail " + n + " [" + new String(buf, 0, n, StandardCharsets.UTF_8).replace("\n", "|") + "]");
            System.out.println("eof " + f.read() + " pointer " + f.getFilePointer());
            System.out.println("skipBytes " + (f.skipBytes(3)));
            f.seek(2);
            System.out.println("int 0x" + Integer.toHexString(f.readInt()));
            // Its channel shares the tagged descriptor.
            ByteBuffer bb = ByteBuffer.allocate(4);
            f.getChannel().read(bb, 1);
            System.out.println("channel size " + f.getChannel().size() + " pread [" + new String(bb.array(), 0, bb.position(), StandardCharsets.UTF_8) + "]");
        }
        try (RandomAccessFile f = new RandomAccessFile(args[1], "r")) {
            System.out.println("opened " + args[1] + ": " + f.length());
        } catch (FileNotFoundException e) {
            System.out.println("missing: " + e.getMessage());
        }
        if (args.length > 2) {
            try (RandomAccessFile f = new RandomAccessFile(args[2], "rw")) {
                byte[] all = new byte[(int) f.length()];
                f.readFully(all);
                System.out.println("rw [" + new String(all, StandardCharsets.UTF_8).replace("\n", "|") + "]");
                f.write("appended\n".getBytes(StandardCharsets.UTF_8));
            }
        }
    }
}
